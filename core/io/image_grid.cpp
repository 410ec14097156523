#include "io/image_grid.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "io/png_file.h"
#include "layers/layer.h"

namespace tandem {
namespace {

constexpr int kGap = 2;  // pixels between the tiles

}  // namespace

void save_image_grid(const std::string& path, const Tensor& images, const ImageGridOptions& o) {
    const Shape& s = images.shape();
    TANDEM_CHECK_AS(ShapeError, images.dtype() == DType::f32 &&
                                    (s.rank() == 3 || (s.rank() == 4 && (s[1] == 1 || s[1] == 3))))
        << "an image grid takes f32 N x C x H x W images with 1 or 3 channels, or N x H x W; got "
        << images.description();
    TANDEM_CHECK_AS(ConfigError, o.columns >= 1)
        << "an image grid needs at least 1 column, got " << o.columns;
    TANDEM_CHECK_AS(ConfigError, std::isfinite(o.low) && std::isfinite(o.high) && o.low < o.high)
        << "an image grid's range must be two finite numbers, low < high; got " << o.low << ", "
        << o.high;
    const std::int64_t n = s[0], channels = s.rank() == 4 ? s[1] : 1, h = s[s.rank() - 2],
                       w = s[s.rank() - 1];
    TANDEM_CHECK_AS(ShapeError, n >= 1)
        << "an image grid needs at least one image, got " << images.description();
    // Logical (NCHW) order on the host, whatever the layout and device.
    const std::vector<float> values =
        images.to(host_device()).to_layout(Layout::contiguous).to_vector();
    const int columns = static_cast<int>(std::min<std::int64_t>(o.columns, n));
    const int rows = static_cast<int>((n + columns - 1) / columns);
    cv::Mat grid(rows * (int(h) + kGap) + kGap, columns * (int(w) + kGap) + kGap, CV_8UC3,
                 cv::Scalar(64, 64, 64));
    const float scale = 255.f / (o.high - o.low);
    for (std::int64_t i = 0; i < n; ++i) {
        const int top = kGap + int(i / columns) * (int(h) + kGap),
                  left = kGap + int(i % columns) * (int(w) + kGap);
        for (std::int64_t y = 0; y < h; ++y)
            for (std::int64_t x = 0; x < w; ++x) {
                auto& pixel = grid.at<cv::Vec3b>(top + int(y), left + int(x));
                for (int c = 0; c < 3; ++c) {
                    const std::int64_t from = channels == 3 ? c : 0;
                    const float v =
                        values[static_cast<std::size_t>(((i * channels + from) * h + y) * w + x)];
                    // OpenCV stores BGR: channel c of an RGB image goes to 2 - c.
                    pixel[2 - c] = static_cast<unsigned char>(
                        std::clamp((v - o.low) * scale, 0.f, 255.f) + 0.5f);
                }
            }
    }
    write_png(path, grid);
}

}  // namespace tandem
