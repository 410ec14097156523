# The core as a stack of static libraries, one per folder of core/, each linked only to the
# ones below it (docs/internals.md, "Layering"; issue 17). The build enforces the order: a
# library's include path is a folder of its own under <build>/include/<library> that holds a
# link to its folder of core/ and nothing else, so a file sees only its own library's headers
# and those of the libraries it links. An #include against the order fails to compile
# ("No such file or directory") instead of quietly making a cycle; layering.wrong_include
# (cmake/layering_probe.cmake) checks that it does.

set(TANDEM_INCLUDE_ROOT ${CMAKE_BINARY_DIR}/include)

# _tandem_expose(root folder files_only): makes `root`/`folder` show core/`folder`. A folder
# whose subfolders are libraries of their own (device/: cpu/, cuda/) shows its own headers one
# by one, so that the subfolders' headers stay out of sight; the glob reruns CMake when one is
# added or removed. Any other folder is one link.
function(_tandem_expose root folder files_only)
  set(source ${CMAKE_SOURCE_DIR}/core/${folder})
  set(shown ${root}/${folder})
  get_filename_component(parent ${shown} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  if(files_only)
    if(IS_SYMLINK ${shown})
      file(REMOVE ${shown})
    endif()
    file(MAKE_DIRECTORY ${shown})
    file(GLOB stale ${shown}/*)
    if(stale)
      file(REMOVE ${stale})  # links only: REMOVE never follows a link into core/
    endif()
    file(GLOB headers CONFIGURE_DEPENDS ${source}/*.h ${source}/*.cuh)
    foreach(header ${headers})
      get_filename_component(name ${header} NAME)
      file(CREATE_LINK ${header} ${shown}/${name} SYMBOLIC)
    endforeach()
  else()
    file(CREATE_LINK ${source} ${shown} SYMBOLIC)
  endif()
endfunction()

# tandem_core_library(<name> <folder> [FILES_ONLY] [SOURCES extra.cpp...] [LINKS lib...]):
# tandem_<name>, a static library of core/<folder>/*.cpp (and SOURCES), with its own include
# root, linked PUBLIC to LINKS (the libraries below it it uses; theirs come with them).
function(tandem_core_library name folder)
  cmake_parse_arguments(arg "FILES_ONLY" "" "SOURCES;EXCLUDE;LINKS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/core/${folder}/*.cpp)
  foreach(excluded ${arg_EXCLUDE})
    list(REMOVE_ITEM sources ${CMAKE_SOURCE_DIR}/core/${folder}/${excluded})
  endforeach()
  set(target tandem_${name})
  add_library(${target} STATIC ${sources} ${arg_SOURCES})
  tandem_compile_in_batches(${target})
  set(root ${TANDEM_INCLUDE_ROOT}/${name})
  _tandem_expose(${root} ${folder} "${arg_FILES_ONLY}")
  target_include_directories(${target} PUBLIC ${root})
  if(arg_LINKS)
    target_link_libraries(${target} PUBLIC ${arg_LINKS})
  endif()
  set_property(GLOBAL APPEND PROPERTY TANDEM_CORE_LIBRARIES ${target})
endfunction()

# tandem_layering_probes(<library> <own header> <header above> ...): the test
# layering.wrong_include. For each triple it preprocesses, with the library's own include
# path and definitions, a file that includes <own header> (which must work: the probe itself
# is sound) and one that includes <header above>, a header of a library above it (which must
# fail for want of the file). Were the include paths shared again, the second would work and
# the test fail.
function(tandem_layering_probes)
  set(script "")
  set(names "")
  while(ARGN)
    list(POP_FRONT ARGN library own above)
    set(target tandem_${library})
    string(APPEND script "set(own_${library} \"${own}\")\nset(above_${library} \"${above}\")\n"
           "set(includes_${library} \"$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>\")\n"
           "set(definitions_${library} \"$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>\")\n")
    list(APPEND names ${library})
  endwhile()
  string(APPEND script "set(libraries \"${names}\")\n")
  file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/layering/probes.cmake CONTENT "${script}")
  add_test(NAME layering.wrong_include
           COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER} -DPROBES=${CMAKE_BINARY_DIR}/layering/probes.cmake
                   -DWORK=${CMAKE_BINARY_DIR}/layering -P ${CMAKE_SOURCE_DIR}/cmake/layering_probe.cmake)
endfunction()
