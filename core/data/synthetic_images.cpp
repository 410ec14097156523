#include "data/synthetic_images.h"

#include <cstdio>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "base/error.h"
#include "base/rng.h"

namespace tandem {
namespace {

const cv::Scalar kColours[6] = {{40, 40, 220},  {40, 200, 40},  {220, 60, 40},
                                {30, 210, 230}, {200, 40, 200}, {230, 230, 230}};  // BGR

int draw_int(std::uint64_t key, std::uint64_t counter, int low, int high) {
    return low + int(rng_bits(key, counter) % std::uint64_t(high - low + 1));
}

cv::Mat make_image(int cls, std::uint64_t key, const SyntheticOptions& o) {
    const int h = draw_int(key, 0, o.min_size, o.max_size);
    const int w = o.square ? h : draw_int(key, 1, o.min_size, o.max_size);
    cv::Mat image(h, w, CV_8UC3);
    // A dim background with coarse noise, so JPEG has texture to encode and the net must look
    // at the shape.
    const cv::Scalar base(draw_int(key, 2, 20, 90), draw_int(key, 3, 20, 90),
                          draw_int(key, 4, 20, 90));
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const std::uint64_t r = rng_bits(key, 100 + std::uint64_t((y / 4) * 4096 + x / 4));
            auto& px = image.at<cv::Vec3b>(y, x);
            for (int c = 0; c < 3; ++c)
                px[c] = cv::saturate_cast<unsigned char>(base[c] + int((r >> (8 * c)) & 31));
        }
    const int side = std::min(h, w);
    const int size = draw_int(key, 5, side / 4, side / 2);
    const cv::Point centre(draw_int(key, 6, size, w - size), draw_int(key, 7, size, h - size));
    const cv::Scalar colour = kColours[(cls / 4) % 6];
    switch (cls % 4) {
        case 0: cv::circle(image, centre, size, colour, cv::FILLED, cv::LINE_AA); break;
        case 1:
            cv::rectangle(image, centre - cv::Point(size, size), centre + cv::Point(size, size),
                          colour, cv::FILLED);
            break;
        case 2: {
            std::vector<cv::Point> p = {centre + cv::Point(0, -size),
                                        centre + cv::Point(size, size),
                                        centre + cv::Point(-size, size)};
            cv::fillConvexPoly(image, p, colour, cv::LINE_AA);
            break;
        }
        default:
            cv::rectangle(image, centre - cv::Point(size, size / 4),
                          centre + cv::Point(size, size / 4), colour, cv::FILLED);
            cv::rectangle(image, centre - cv::Point(size / 4, size),
                          centre + cv::Point(size / 4, size), colour, cv::FILLED);
    }
    return image;
}

}  // namespace

std::int64_t write_synthetic_images(const std::string& dir, const SyntheticOptions& o) {
    TANDEM_CHECK_AS(ConfigError, o.classes >= 1 && o.classes <= 1000)
        << "synthetic classes must be in [1, 1000], got " << o.classes;
    TANDEM_CHECK_AS(ConfigError, o.per_class >= 1)
        << "synthetic per_class must be >= 1, got " << o.per_class;
    TANDEM_CHECK_AS(ConfigError, o.min_size >= 8 && o.min_size <= o.max_size && o.max_size <= 4096)
        << "synthetic sizes need 8 <= min_size <= max_size <= 4096, got " << o.min_size << " and "
        << o.max_size;
    TANDEM_CHECK_AS(ConfigError, o.format == "jpg" || o.format == "png")
        << "synthetic format must be jpg or png, got '" << o.format << "'";
    TANDEM_CHECK_AS(ConfigError, o.quality >= 1 && o.quality <= 100)
        << "JPEG quality must be in [1, 100], got " << o.quality;
    const std::vector<int> params = {cv::IMWRITE_JPEG_QUALITY, o.quality};
    std::int64_t written = 0;
    for (int c = 0; c < o.classes; ++c) {
        char name[32];
        std::snprintf(name, sizeof name, "class_%03d", c);
        const std::filesystem::path folder = std::filesystem::path(dir) / name;
        std::filesystem::create_directories(folder);
        for (int n = 0; n < o.per_class; ++n) {
            const std::uint64_t key = rng_key(rng_key(o.seed, std::uint64_t(c)), std::uint64_t(n));
            char file[32];
            std::snprintf(file, sizeof file, "%05d.%s", n, o.format.c_str());
            const std::string path = (folder / file).string();
            TANDEM_CHECK_AS(BackendError, cv::imwrite(path, make_image(c, key, o), params))
                << "OpenCV could not write " << path;
            ++written;
        }
    }
    return written;
}

}  // namespace tandem
