// Writing an OpenCV image as a PNG file: encoded in memory, then written atomically (a reader
// never sees half a picture), the folder created. DataError naming the file on failure.
#pragma once

#include <opencv2/core.hpp>

#include <string>

namespace tandem {

void write_png(const std::string& path, const cv::Mat& image);

}  // namespace tandem
