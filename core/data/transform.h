// ImageTransform: one sample from stored bytes to normalised floats (issue 3), on OpenCV.
//
//   decode -> resize (shorter side) -> crop (random or centre, from an optionally padded image)
//   -> horizontal flip -> colour jitter (brightness, contrast, saturation) -> mean/std
//   normalisation -> C x H x W floats (or H x W x C for channels_last), channels in RGB order.
//
// Every random choice is drawn from the key the caller passes, rng_key(seed, epoch, sample),
// so an image is transformed the same way whatever thread does it and whenever.
#pragma once

#include <cstdint>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "data/data_source.h"
#include "tensor/tensor.h"

namespace tandem {

struct TransformOptions {
    int channels = 0;     // 0: as stored; 1 or 3 converts
    int resize = 0;       // shorter side to this many pixels; 0 keeps the size
    int crop_height = 0;  // output size; 0 (both) takes the whole image
    int crop_width = 0;
    bool random_crop = false;  // uniformly placed crop; otherwise centred
    int pad = 0;               // pixels of `fill` around the image before cropping
    int fill = 0;              // value of the padding pixels, 0..255
    bool flip = false;         // mirror left-right with probability 1/2
    float brightness = 0;      // jitter factors drawn from [max(0, 1 - x), 1 + x]
    float contrast = 0;
    float saturation = 0;
    std::vector<float> mean{0.f};  // per channel (or one for all), on the 0..1 scale;
                                   // each list has 1 or 3 values
    std::vector<float> std{1.f};
};

// The first option of `options` that is not at its default, by its Lua name ("crop", "flip",
// "mean"), or "" when none is: every one of them is about images, and the loader refuses them
// for interaction samples, which it copies as they are stored.
std::string_view first_set_transform_option(const TransformOptions& options);

// A sample decoded (and resized) with its random choices drawn: what is left to do is to
// write it out. Its shape is known before any pixel is written, so the loader can find a
// place for it in a batch first and have it written straight there.
struct PreparedImage {
    cv::Mat image;   // 8-bit, BGR or grey, after resize
    int crop_y = 0;  // top-left corner of the crop in the padded image
    int crop_x = 0;
    int height = 0;  // output size
    int width = 0;
    bool flip = false;
    float brightness = 1.f, contrast = 1.f, saturation = 1.f;

    Shape shape() const { return Shape{image.channels(), height, width}; }
    std::size_t numel() const { return std::size_t(image.channels()) * height * width; }
};

class ImageTransform {
public:
    // ConfigError for an option out of range (names the option).
    explicit ImageTransform(TransformOptions options);

    // Transforms `sample` with the random choices of `rng`; writes the result into `out`
    // (resized to fit) in `layout` order and returns its shape C x H x W.
    // CorruptSampleError from decoding; DataError when the image (after resize and padding) is
    // smaller than the crop, or the mean/std lists do not fit its channel count.
    Shape apply(const RawSample& sample, std::uint64_t rng, Layout layout,
                std::vector<float>& out) const;

    // apply() in two steps. prepare: decode, resize, check, draw the random choices (the same
    // errors as apply). write: crop, flip, jitter and normalise into `out`, which has room for
    // image.numel() floats.
    PreparedImage prepare(const RawSample& sample, std::uint64_t rng) const;
    void write(const PreparedImage& image, Layout layout, float* out) const;

    const TransformOptions& options() const { return options_; }

private:
    TransformOptions options_;
};

}  // namespace tandem
