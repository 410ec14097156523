#include "data/transform.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <opencv2/imgproc.hpp>
#include <utility>

#include "base/rng.h"
#include "data/image_decode.h"

namespace tandem {
namespace {

// Counters of the random choices drawn from a sample's key.
enum Draw : std::uint64_t {
    kFlip = 0,
    kCropY = 1,
    kCropX = 2,
    kBright = 3,
    kContrast = 4,
    kSat = 5
};

float jitter_factor(float amount, std::uint64_t rng, Draw draw) {
    if (amount <= 0) return 1.f;
    const float low = std::max(0.f, 1.f - amount), high = 1.f + amount;
    return low + (high - low) * rng_uniform(rng, draw);
}

}  // namespace

std::string_view first_set_transform_option(const TransformOptions& o) {
    const TransformOptions d;
    const std::pair<std::string_view, bool> set[] = {
        {"channels", o.channels != d.channels},
        {"resize", o.resize != d.resize},
        {"crop", o.crop_height != d.crop_height || o.crop_width != d.crop_width},
        {"random_crop", o.random_crop != d.random_crop},
        {"pad", o.pad != d.pad},
        {"fill", o.fill != d.fill},
        {"flip", o.flip != d.flip},
        {"brightness", o.brightness != d.brightness},
        {"contrast", o.contrast != d.contrast},
        {"saturation", o.saturation != d.saturation},
        {"mean", o.mean != d.mean},
        {"std", o.std != d.std}};
    for (const auto& [name, differs] : set)
        if (differs) return name;
    return {};
}

ImageTransform::ImageTransform(TransformOptions o) : options_(std::move(o)) {
    const auto& t = options_;
    TANDEM_CHECK_AS(ConfigError, t.channels == 0 || t.channels == 1 || t.channels == 3)
        << "transform option channels must be 0, 1 or 3, got " << t.channels;
    TANDEM_CHECK_AS(ConfigError, t.resize >= 0)
        << "transform option resize must be >= 0, got " << t.resize;
    TANDEM_CHECK_AS(ConfigError, t.crop_height >= 0 && t.crop_width >= 0 &&
                                     (t.crop_height > 0) == (t.crop_width > 0))
        << "transform option crop must be positive (height and width), got " << t.crop_height << "x"
        << t.crop_width;
    TANDEM_CHECK_AS(ConfigError, t.pad >= 0) << "transform option pad must be >= 0, got " << t.pad;
    TANDEM_CHECK_AS(ConfigError, t.pad == 0 || t.crop_height > 0)
        << "transform option pad needs a crop (pad, then crop back to size)";
    TANDEM_CHECK_AS(ConfigError, t.fill >= 0 && t.fill <= 255)
        << "transform option fill must be in [0, 255], got " << t.fill;
    const std::pair<const char*, float> jitter[] = {
        {"brightness", t.brightness}, {"contrast", t.contrast}, {"saturation", t.saturation}};
    for (const auto& [name, v] : jitter)
        TANDEM_CHECK_AS(ConfigError, std::isfinite(v) && v >= 0)
            << "transform option " << name << " must be a finite number >= 0, got " << v;
    auto one_or_three = [](std::size_t n) { return n == 1 || n == 3; };
    TANDEM_CHECK_AS(ConfigError, one_or_three(t.mean.size()) && one_or_three(t.std.size()))
        << "transform options mean and std need 1 or 3 values each, got " << t.mean.size()
        << " and " << t.std.size();
    for (float s : t.std)
        TANDEM_CHECK_AS(ConfigError, std::isfinite(s) && s > 0)
            << "transform option std must be > 0, got " << s;
    for (float m : t.mean)  // an inf mean made every pixel NaN (issue 19)
        TANDEM_CHECK_AS(ConfigError, std::isfinite(m))
            << "transform option mean must be finite, got " << m;
}

Shape ImageTransform::apply(const RawSample& sample, std::uint64_t rng, Layout layout,
                            std::vector<float>& out) const {
    const PreparedImage prepared = prepare(sample, rng);
    out.resize(prepared.numel());
    write(prepared, layout, out.data());
    return prepared.shape();
}

PreparedImage ImageTransform::prepare(const RawSample& sample, std::uint64_t rng) const {
    const TransformOptions& o = options_;
    PreparedImage p;
    p.image = resize_shorter(decode_image(sample, o.channels), o.resize);
    const int c = p.image.channels(), h = p.image.rows, w = p.image.cols;
    TANDEM_CHECK_AS(DataError, (o.mean.size() == 1 || int(o.mean.size()) == c) &&
                                   (o.std.size() == 1 || int(o.std.size()) == c))
        << "image '" << sample.key << "' has " << c << " channels but mean/std give "
        << o.mean.size() << " and " << o.std.size() << " values";
    const int ch = o.crop_height > 0 ? o.crop_height : h;
    const int cw = o.crop_width > 0 ? o.crop_width : w;
    const int room_y = h + 2 * o.pad - ch, room_x = w + 2 * o.pad - cw;
    TANDEM_CHECK_AS(DataError, room_y >= 0 && room_x >= 0)
        << "image '" << sample.key << "' is " << h << "x" << w
        << (o.resize > 0 ? " after resize" : "") << (o.pad > 0 ? " before padding" : "")
        << ", smaller than the " << ch << "x" << cw << " crop";
    p.crop_y = o.random_crop ? int(rng_bits(rng, kCropY) % std::uint64_t(room_y + 1)) : room_y / 2;
    p.crop_x = o.random_crop ? int(rng_bits(rng, kCropX) % std::uint64_t(room_x + 1)) : room_x / 2;
    p.height = ch;
    p.width = cw;
    p.flip = o.flip && (rng_bits(rng, kFlip) & 1);
    p.brightness = jitter_factor(o.brightness, rng, kBright);
    p.contrast = jitter_factor(o.contrast, rng, kContrast);
    p.saturation = c == 3 ? jitter_factor(o.saturation, rng, kSat) : 1.f;
    return p;
}

void ImageTransform::write(const PreparedImage& p, Layout layout, float* out) const {
    const TransformOptions& o = options_;
    const cv::Mat& image = p.image;
    const int c = image.channels(), h = image.rows, w = image.cols;
    const int ch = p.height, cw = p.width, oy = p.crop_y, ox = p.crop_x;
    const bool flip = p.flip;
    const float bright = p.brightness, contrast = p.contrast, saturation = p.saturation;
    const bool jitter = bright != 1.f || contrast != 1.f || saturation != 1.f;

    // Without jitter: one pass from the 8-bit image to normalised floats through a table per
    // channel, so the transform costs little next to decoding (issue 3 asks >= 0.9 of a plain
    // decode-crop-flip loop).
    std::array<float, 3> scale{}, shift{};
    for (int k = 0; k < c; ++k) {
        const float m = o.mean[o.mean.size() == 1 ? 0 : std::size_t(k)];
        const float sd = o.std[o.std.size() == 1 ? 0 : std::size_t(k)];
        scale[k] = 1.f / (255.f * sd);
        shift[k] = -m / sd;
    }
    const std::size_t plane = std::size_t(ch) * cw;
    if (!jitter) {
        float table[3][256];
        for (int k = 0; k < c; ++k)
            for (int v = 0; v < 256; ++v) table[k][v] = float(v) * scale[k] + shift[k];
        const bool last = layout == Layout::channels_last;
        for (int y = 0; y < ch; ++y) {
            const int sy = oy + y - o.pad;
            const unsigned char* row = sy >= 0 && sy < h ? image.ptr<unsigned char>(sy) : nullptr;
            for (int k = 0; k < c; ++k) {
                const int src = c == 3 ? 2 - k : 0;  // BGR in the image, RGB in the tensor
                const float* t = table[k];
                const float fill = t[o.fill];
                float* dst =
                    last ? out + std::size_t(y) * cw * c + k : out + (std::size_t(k) * ch + y) * cw;
                const std::ptrdiff_t step = last ? c : 1;
                if (row != nullptr && o.pad == 0 && !flip) {
                    const unsigned char* p = row + std::size_t(ox) * c + src;
                    for (int x = 0; x < cw; ++x) dst[x * step] = t[p[x * c]];
                } else if (row != nullptr && o.pad == 0) {
                    const unsigned char* p = row + std::size_t(ox + cw - 1) * c + src;
                    for (int x = 0; x < cw; ++x) dst[x * step] = t[p[-std::ptrdiff_t(x) * c]];
                } else {
                    for (int x = 0; x < cw; ++x) {
                        const int sx = ox + (flip ? cw - 1 - x : x) - o.pad;
                        dst[x * step] =
                            row != nullptr && sx >= 0 && sx < w ? t[row[sx * c + src]] : fill;
                    }
                }
            }
        }
        return;
    }

    // With jitter, pass 1: the crop (flipped, padded) as RGB values 0..255, with brightness.
    thread_local std::vector<float> pixels;
    pixels.resize(plane * c);
    for (int y = 0; y < ch; ++y) {
        const int sy = oy + y - o.pad;
        const unsigned char* row = sy >= 0 && sy < h ? image.ptr<unsigned char>(sy) : nullptr;
        float* dst = pixels.data() + std::size_t(y) * cw * c;
        for (int x = 0; x < cw; ++x) {
            const int sx = ox + (flip ? cw - 1 - x : x) - o.pad;
            const bool inside = row != nullptr && sx >= 0 && sx < w;
            for (int k = 0; k < c; ++k) {
                // BGR in the image, RGB in the tensor.
                const float v = inside ? float(row[sx * c + (c == 3 ? 2 - k : 0)]) : float(o.fill);
                dst[x * c + k] = bright == 1.f ? v : std::min(255.f, v * bright);
            }
        }
    }
    // Pass 2: contrast against the mean grey of the crop, then saturation against each pixel's
    // grey (torchvision's ColorJitter in a fixed order), clamped to 0..255 after each.
    if (contrast != 1.f || saturation != 1.f) {
        auto grey = [&](const float* p) {
            return c == 3 ? 0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2] : p[0];
        };
        float mean_grey = 0;
        if (contrast != 1.f) {
            double sum = 0;
            for (std::size_t i = 0; i < plane; ++i) sum += grey(pixels.data() + i * c);
            mean_grey = float(sum / double(plane));
        }
        for (std::size_t i = 0; i < plane; ++i) {
            float* p = pixels.data() + i * c;
            if (contrast != 1.f)
                for (int k = 0; k < c; ++k)
                    p[k] = std::clamp((p[k] - mean_grey) * contrast + mean_grey, 0.f, 255.f);
            if (saturation != 1.f) {
                const float g = grey(p);
                for (int k = 0; k < c; ++k)
                    p[k] = std::clamp(g + (p[k] - g) * saturation, 0.f, 255.f);
            }
        }
    }
    // Pass 3: normalise into the requested layout.
    if (layout == Layout::channels_last) {
        for (std::size_t i = 0; i < plane; ++i)
            for (int k = 0; k < c; ++k) out[i * c + k] = pixels[i * c + k] * scale[k] + shift[k];
    } else {
        for (int k = 0; k < c; ++k) {
            float* dst = out + std::size_t(k) * plane;
            for (std::size_t i = 0; i < plane; ++i)
                dst[i] = pixels[i * c + k] * scale[k] + shift[k];
        }
    }
}

}  // namespace tandem
