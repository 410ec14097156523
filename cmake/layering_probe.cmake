# layering.wrong_include (cmake/layers.cmake, tandem_layering_probes): run as
#   cmake -DCXX=<compiler> -DPROBES=<probes.cmake> -DWORK=<folder> -P layering_probe.cmake
# For each library of PROBES, preprocesses an include of one of its own headers, which must
# work, and of a header of a library above it, which must fail because the file is not found.

include(${PROBES})

# Preprocesses `#include "header"` with `library`'s include path and definitions; sets
# `result` (the compiler's exit status) and `output` (what it printed) in the caller.
function(preprocess library header)
  string(MAKE_C_IDENTIFIER "${library}_${header}" name)
  set(source ${WORK}/${name}.cpp)
  file(WRITE ${source} "#include \"${header}\"\n")
  set(flags "")
  foreach(dir ${includes_${library}})
    list(APPEND flags -I${dir})
  endforeach()
  foreach(definition ${definitions_${library}})
    list(APPEND flags -D${definition})
  endforeach()
  execute_process(COMMAND ${CXX} -std=c++20 -E -o /dev/null ${flags} ${source}
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(result ${status} PARENT_SCOPE)
  set(output "${out}" PARENT_SCOPE)
endfunction()

set(failures "")
foreach(library ${libraries})
  preprocess(${library} ${own_${library}})
  if(NOT result EQUAL 0)
    string(APPEND failures "tandem_${library} cannot include its own ${own_${library}}:\n${output}\n")
    continue()
  endif()
  preprocess(${library} ${above_${library}})
  string(FIND "${output}" "${above_${library}}" named)
  if(result EQUAL 0)
    string(APPEND failures "tandem_${library} includes ${above_${library}}, above it in the layer order\n")
  elseif(named EQUAL -1 OR NOT output MATCHES "No such file|not found")
    string(APPEND failures "tandem_${library} fails on ${above_${library}} for another reason:\n${output}\n")
  else()
    message(STATUS "ok: tandem_${library} sees ${own_${library}} but not ${above_${library}}")
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "layering not enforced:\n${failures}")
endif()
