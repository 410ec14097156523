# The libFuzzer harnesses of tests/fuzz (issue 19): clang, AddressSanitizer and UBSan, built
# over the parsers they feed and nothing else, so the fuzz build takes a minute rather than a
# second build of the whole core. `make fuzz` builds them and runs each for a fixed budget
# (tests/fuzz/run).
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "TANDEM_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
endif()
find_package(ZLIB REQUIRED)
find_package(PNG REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(WEBP REQUIRED IMPORTED_TARGET libwebp)
pkg_check_modules(LMDB REQUIRED IMPORTED_TARGET lmdb)
include(cmake/opencv.cmake)

set(TANDEM_FUZZ_SANITIZERS address,undefined)
# The parsers, instrumented for coverage; -fno-sanitize-recover: any UB finding stops the run.
add_library(tandem_fuzz_parsers STATIC
  core/base/error.cpp core/base/format.cpp core/tensor/shape.cpp
  core/base/json.cpp core/io/safetensors_layout.cpp
  core/data/record.cpp core/data/data_source.cpp core/data/image_decode.cpp core/data/image_format.cpp
  core/data/image_header.cpp core/data/png_check.cpp
  core/data/png_decode.cpp
  core/data/idx.cpp core/data/interaction_text.cpp core/data/interaction_layout.cpp
  core/data/lmdb_source.cpp core/data/lmdb_env.cpp core/data/lmdb_check.cpp core/data/lmdb_writer.cpp
  core/base/atomic_file.cpp
  core/plan/hardware.cpp core/plan/topology.cpp core/device/workspace_budget.cpp)
target_include_directories(tandem_fuzz_parsers PUBLIC core)
target_compile_options(tandem_fuzz_parsers PUBLIC
  -fsanitize=fuzzer-no-link,${TANDEM_FUZZ_SANITIZERS} -fno-sanitize-recover=all -fno-omit-frame-pointer -g)
target_link_libraries(tandem_fuzz_parsers PUBLIC tandem_opencv PkgConfig::WEBP PkgConfig::LMDB PNG::PNG ZLIB::ZLIB)

foreach(target safetensors record image idx topology interactions lmdb)
  add_executable(fuzz_${target} tests/fuzz/fuzz_${target}.cpp)
  target_link_libraries(fuzz_${target} PRIVATE tandem_fuzz_parsers)
  target_link_options(fuzz_${target} PRIVATE -fsanitize=fuzzer,${TANDEM_FUZZ_SANITIZERS})
endforeach()
