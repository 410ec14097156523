# A clean build's compile time, which is what CI pays three times (release, ASan, TSan).
#
# Every file of ours includes most of the standard library (about 110,000 of a typical file's
# 112,000 lines after preprocessing) and instantiates the same templates (vector<Tensor>,
# shared_ptr, std::function): parsing and compiling those again for each file was most of the
# build. Two remedies:
#
# - Unity builds: each target's .cpp files are compiled in batches of eight, as one file each,
#   so a batch parses and instantiates the common code once. Ten core files took 49
#   CPU-seconds one by one and 22 as one batch (-O2, 2026-11-26). Names at file scope (static
#   functions, anonymous namespaces, a test's helpers) must therefore not clash between the
#   .cpp files of one target, tests included: give file-local helpers names of their own, and
#   put what two files share in a header (tests/support for the tests).
# - The tests also get the standard library and GoogleTest precompiled once.
#
# -DTANDEM_UNITY=OFF compiles everything file by file (quicker when one .cpp changes at a time).
option(TANDEM_UNITY "Compile each target's C++ files in batches (unity build)" ON)

set(TANDEM_PRECOMPILED_HEADERS
  <algorithm> <array> <atomic> <chrono> <cmath> <condition_variable> <cstddef> <cstdint>
  <cstdio> <cstdlib> <cstring> <exception> <filesystem> <functional> <limits> <map> <memory>
  <mutex> <optional> <set> <span> <sstream> <stdexcept> <string> <string_view> <thread> <tuple>
  <unordered_map> <utility> <vector>)

# tandem_compile_in_batches(target): its C++ files as a unity build (with TANDEM_UNITY).
function(tandem_compile_in_batches target)
  set_target_properties(${target} PROPERTIES UNITY_BUILD ${TANDEM_UNITY} UNITY_BUILD_BATCH_SIZE 8)
endfunction()

# tandem_precompile(target [headers...]): the common standard headers and `headers`,
# precompiled once for the target's C++ files.
function(tandem_precompile target)
  set(headers ${TANDEM_PRECOMPILED_HEADERS} ${ARGN})
  list(TRANSFORM headers PREPEND "$<$<COMPILE_LANGUAGE:CXX>:")
  list(TRANSFORM headers APPEND ">")
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()
