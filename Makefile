# The README's two commands: `make run` and `make test`. Each installs what is missing,
# configures and builds with CMake + Ninja, then trains (run) or runs every test (test).
BUILD ?= build
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release -DTANDEM_WERROR=ON
# -O1: sanitizer builds compile 2-3 times faster than at -O2 with full debug info, and their
# tests still run quickly.
SANITIZE_FLAGS ?= -DCMAKE_BUILD_TYPE=None -DCMAKE_C_FLAGS=-O1 -DCMAKE_CXX_FLAGS=-O1 -DTANDEM_CUDA=OFF
RECIPE ?= recipes/fashion_mnist.lua
NET ?= recipes/nets/smallbn.lua
ARGS ?=
# The default run asks the planner for the best layout of this machine's CPU devices.
RUN_ARGS ?= --plan=auto
TSAN_OPTIONS ?= halt_on_error=1 ignore_noninstrumented_modules=1 suppressions=$(CURDIR)/tests/tsan.supp

.PHONY: all deps build run test sanitize fuzz bench bench-peers bench-race clean

all: build

deps:
	@tools/install-deps

build: deps
	@cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD)

run: build
	$(BUILD)/tandem run $(RECIPE) $(RUN_ARGS) $(ARGS)

# Sanitizer and fuzz runs first, so ctest's summary closes the output.
test: build sanitize fuzz
	cd $(BUILD) && ctest --output-on-failure --timeout 900 -j 2

# Every C++ test under AddressSanitizer (+ UBSan); under ThreadSanitizer, the tests that start
# threads (CMakeLists.txt's TANDEM_THREADED_TESTS), which that build holds alone. Each runs as one
# shard per core at once (tools/run-shards), OpenMP's idle threads asleep as under `tandem` (with
# the shards side by side, spinning ones took the suite's time 2.4x).
sanitize: deps
	@cmake -S . -B build-asan -G Ninja $(SANITIZE_FLAGS) -DTANDEM_SANITIZE=address,undefined >/dev/null
	@cmake --build build-asan --target tandem_tests
	UBSAN_OPTIONS=halt_on_error=1 OMP_WAIT_POLICY=passive tools/run-shards build-asan/tandem_tests --gtest_brief=1
	@cmake -S . -B build-tsan -G Ninja $(SANITIZE_FLAGS) -DTANDEM_SANITIZE=thread >/dev/null
	@cmake --build build-tsan --target tandem_tests
	TSAN_OPTIONS="$(TSAN_OPTIONS)" OMP_WAIT_POLICY=passive tools/run-shards build-tsan/tandem_tests --gtest_brief=1

# libFuzzer over the parsers of files users hand us (safetensors, LMDB databases and records, images, idx,
# topologies): a clang build of those alone (cmake/fuzz.cmake), each run for FUZZ_SECONDS.
FUZZ_SECONDS ?= 10
fuzz: deps
	@cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS=-O1 -DTANDEM_FUZZ=ON >/dev/null
	@cmake --build build-fuzz
	tests/fuzz/run build-fuzz $(FUZZ_SECONDS)

bench: build
	$(BUILD)/tandem bench $(NET) $(ARGS)

# The peer benchmarks run Debian's PyTorch (needs python3-torch); PEERS=pypi adds today's PyTorch
# from PyPI, installed into .venv-torch when missing (about 1 GB), and takes the ratio against it.
PEERS ?= debian
ifeq ($(PEERS),pypi)
PEER_VENV := .venv-torch/bin/python
PEER_PYTHONS := --python $(CURDIR)/.venv-torch/bin/python,/usr/bin/python3
endif

.venv-torch/bin/python:
	python3 -m venv .venv-torch && .venv-torch/bin/pip install -q torch numpy

# Tandem against PyTorch on the reference nets, in one run.
bench-peers: build $(PEER_VENV)
	bench/peers.py $(PEER_PYTHONS) $(ARGS)

# Time to 92.5% test accuracy: `make run`'s recipe against the same training in PyTorch
# (bench/race_torch.py), alternating. Up to an hour a round on 2 cores (each run stops at the
# target, within 10 epochs).
bench-race: build $(PEER_VENV)
	bench/race.py $(PEER_PYTHONS) $(ARGS)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
