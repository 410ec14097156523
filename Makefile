# The README's two commands: `make run` and `make test`. Each installs what is missing,
# configures and builds with CMake + Ninja, then trains (run) or runs every test (test).
BUILD ?= build
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release -DTANDEM_WERROR=ON
RECIPE ?= recipes/fashion_mnist.lua
ARGS ?=

.PHONY: all deps build run test bench clean

all: build

deps:
	@tools/install-deps

build: deps
	@cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD)

run: build
	$(BUILD)/tandem run $(RECIPE) $(ARGS)

test: build
	cd $(BUILD) && ctest --output-on-failure --timeout 900 -j 2

bench: build
	$(BUILD)/tandem bench $(RECIPE) $(ARGS)

clean:
	rm -rf $(BUILD)
