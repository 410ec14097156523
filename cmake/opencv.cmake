# OpenCV's core, imgproc and imgcodecs as the interface target tandem_opencv.
# Debian splits OpenCV per module and ships its CMake config and opencv4.pc only with the full
# libopencv-dev, so the three libraries are found one by one when neither is there. SYSTEM:
# its headers trip C++20 deprecation warnings that -Werror would turn into errors.
find_package(OpenCV QUIET COMPONENTS core imgproc imgcodecs)
add_library(tandem_opencv INTERFACE)
if(OpenCV_FOUND)
  target_link_libraries(tandem_opencv INTERFACE ${OpenCV_LIBS})
  target_include_directories(tandem_opencv SYSTEM INTERFACE ${OpenCV_INCLUDE_DIRS})
else()
  find_path(OPENCV_INCLUDE_DIR opencv2/imgcodecs.hpp PATH_SUFFIXES opencv4 REQUIRED)
  foreach(module core imgproc imgcodecs)
    find_library(OPENCV_${module}_LIBRARY opencv_${module} REQUIRED)
    target_link_libraries(tandem_opencv INTERFACE ${OPENCV_${module}_LIBRARY})
  endforeach()
  target_include_directories(tandem_opencv SYSTEM INTERFACE ${OPENCV_INCLUDE_DIR})
endif()

