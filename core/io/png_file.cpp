#include "io/png_file.h"

#include <opencv2/imgcodecs.hpp>

#include <filesystem>
#include <vector>

#include "base/atomic_file.h"
#include "base/error.h"

namespace tandem {

void write_png(const std::string& path, const cv::Mat& image) {
    std::vector<unsigned char> png;
    TANDEM_CHECK_AS(DataError, cv::imencode(".png", image, png))
        << "OpenCV could not encode " << path;
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code error;
    if (!parent.empty())
        std::filesystem::create_directories(parent, error);  // the write says why it fails
    write_file_atomic(path, {reinterpret_cast<const char*>(png.data()), png.size()});
}

}  // namespace tandem
