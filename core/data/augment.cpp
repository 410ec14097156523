#include "data/augment.h"

#include <vector>

#include "base/rng.h"

namespace tandem {

void augment_batch(Tensor& images, std::span<const std::int64_t> sample_ids,
                   const AugmentOptions& o, std::uint64_t seed, std::int64_t epoch) {
    if (!o.flip && o.crop_pad == 0) return;
    const Shape& s = images.shape();
    TANDEM_CHECK_AS(ShapeError, s.rank() == 4 && images.layout() == Layout::contiguous)
        << "augment_batch needs a contiguous N x C x H x W batch, got " << images.description();
    TANDEM_CHECK_AS(ShapeError, static_cast<std::int64_t>(sample_ids.size()) == s[0])
        << "augment_batch: " << sample_ids.size() << " sample ids for a batch of " << s[0];
    TANDEM_CHECK_AS(ConfigError, o.crop_pad >= 0 && o.crop_pad < std::min(s[2], s[3]))
        << "crop padding " << o.crop_pad << " must be in [0, " << std::min(s[2], s[3]) << ")";
    const std::int64_t c = s[1], h = s[2], w = s[3];
    const std::uint64_t epoch_key = rng_key(seed, static_cast<std::uint64_t>(epoch));
    float* data = images.data<float>();

#pragma omp parallel for
    for (std::int64_t n = 0; n < s[0]; ++n) {
        const std::uint64_t key = rng_key(epoch_key, static_cast<std::uint64_t>(sample_ids[n]));
        const bool flip = o.flip && (rng_bits(key, 0) & 1);
        const std::int64_t span = 2 * o.crop_pad + 1;
        const std::int64_t dy = static_cast<std::int64_t>(rng_bits(key, 1) % span) - o.crop_pad;
        const std::int64_t dx = static_cast<std::int64_t>(rng_bits(key, 2) % span) - o.crop_pad;
        std::vector<float> plane(static_cast<std::size_t>(h * w));
        for (std::int64_t ch = 0; ch < c; ++ch) {
            float* p = data + (n * c + ch) * h * w;
            std::copy(p, p + h * w, plane.begin());
            for (std::int64_t y = 0; y < h; ++y)
                for (std::int64_t x = 0; x < w; ++x) {
                    // Output (y, x) reads source (y + dy, x' + dx), x' mirrored when flipping.
                    const std::int64_t sy = y + dy;
                    const std::int64_t sx = (flip ? w - 1 - x : x) + dx;
                    p[y * w + x] = (sy >= 0 && sy < h && sx >= 0 && sx < w)
                                       ? plane[static_cast<std::size_t>(sy * w + sx)]
                                       : o.fill;
                }
        }
    }
}

}  // namespace tandem
