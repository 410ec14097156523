# The CUDA backend (issue 7). TANDEM_CUDA=AUTO builds it when nvcc, cuDNN and NCCL are found,
# ON makes their absence an error, OFF skips it. Sets TANDEM_CUDA_ENABLED and, when on, makes
# core/device/cuda's .cpp files the library tandem_cuda (above tandem_cpu: a GPU's pinned host
# memory is a CPU device; cmake/layers.cmake) and its .cu files tandem_cuda_kernels, which
# takes raw pointers only and sees no C++20 header. TANDEM_CUDA=1/0 is defined for every
# library (on tandem_base), so headers read the same in all of them.
set(TANDEM_CUDA_ENABLED OFF)
string(TOUPPER "${TANDEM_CUDA}" _tandem_cuda_mode)
set(_tandem_cuda_missing "")
if(NOT _tandem_cuda_mode STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX}
     AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    set(_tandem_cuda_missing "nvcc")
  else()
    find_package(CUDAToolkit QUIET)
    find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    foreach(item CUDAToolkit_FOUND CUDNN_INCLUDE_DIR CUDNN_LIBRARY NCCL_INCLUDE_DIR NCCL_LIBRARY)
      if(NOT ${item})
        list(APPEND _tandem_cuda_missing ${item})
      endif()
    endforeach()
  endif()
  if(_tandem_cuda_missing AND _tandem_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "TANDEM_CUDA=ON but not found: ${_tandem_cuda_missing}")
  elseif(_tandem_cuda_missing)
    message(STATUS "CUDA backend: off (not found: ${_tandem_cuda_missing})")
  else()
    set(TANDEM_CUDA_ENABLED ON)
  endif()
endif()

if(TANDEM_CUDA_ENABLED)
  # SASS for Ampere (sm_80; runs on sm_86/89 too) and Hopper, and compute_90 PTX that the
  # driver compiles for newer GPUs. CUDA 13 dropped Volta. Two targets keep CI's compile short.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
  endif()
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)  # one cudart, the one the C++ side links
  enable_language(CUDA)
  message(STATUS "CUDA backend: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES}, ${CUDNN_LIBRARY}, ${NCCL_LIBRARY})")
  file(GLOB TANDEM_CUDA_KERNEL_SOURCES CONFIGURE_DEPENDS core/device/cuda/*.cu)
  add_library(tandem_cuda_kernels STATIC ${TANDEM_CUDA_KERNEL_SOURCES})
  # The kernels see what tandem_cuda sees below it that they use (base/, device/'s shared
  # math, device/cuda/) and nothing above: an include of layers/ fails (layering.wrong_include).
  target_include_directories(tandem_cuda_kernels PRIVATE ${TANDEM_INCLUDE_ROOT}/base
                             ${TANDEM_INCLUDE_ROOT}/device ${TANDEM_INCLUDE_ROOT}/cuda)
  set_target_properties(tandem_cuda_kernels PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
  # constexpr host functions (base/rng.h) run on the device: dropout masks match the CPU's.
  target_compile_options(tandem_cuda_kernels PRIVATE --expt-relaxed-constexpr
                         -Xcompiler=-Wall,-Wextra)
  if(TANDEM_WERROR)
    target_compile_options(tandem_cuda_kernels PRIVATE -Werror=all-warnings -Xcompiler=-Werror)
  endif()
  target_link_libraries(tandem_cuda_kernels PUBLIC CUDA::cudart)

  tandem_core_library(cuda device/cuda LINKS tandem_cpu tandem_cuda_kernels CUDA::cudart CUDA::cublas
                      ${CUDNN_LIBRARY} ${NCCL_LIBRARY})
  target_include_directories(tandem_cuda SYSTEM PUBLIC ${CUDAToolkit_INCLUDE_DIRS}
                             ${CUDNN_INCLUDE_DIR} ${NCCL_INCLUDE_DIR})
  target_compile_definitions(tandem_base PUBLIC TANDEM_CUDA=1)
else()
  target_compile_definitions(tandem_base PUBLIC TANDEM_CUDA=0)
endif()
