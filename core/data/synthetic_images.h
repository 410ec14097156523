// A synthetic image folder for tests and benchmarks (issue 3; `tandem gen-images`): colour
// JPEGs (or PNGs) of 64-256 pixels, one sub-folder per class. Class c draws shape c % 4
// (disc, square, triangle, cross) in colour (c / 4) % 6 on a noisy background, at a random
// place and size, so a small net can learn it while the images still vary.
#pragma once

#include <cstdint>
#include <string>

namespace tandem {

struct SyntheticOptions {
    int classes = 4;
    int per_class = 16;
    int min_size = 64;  // side lengths drawn from [min_size, max_size]
    int max_size = 256;
    bool square = false;  // height == width
    std::uint64_t seed = 1;
    std::string format = "jpg";  // jpg or png
    int quality = 90;            // JPEG quality
};

// Writes DIR/class_<c>/<n>.<format>; returns how many images it wrote. ConfigError for bad
// options; BackendError when OpenCV cannot write a file.
std::int64_t write_synthetic_images(const std::string& dir, const SyntheticOptions& options);

}  // namespace tandem
