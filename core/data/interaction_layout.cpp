// layout_interactions (data/interactions.h): parsed lines as samples of one length and width.
// Apart from the database code so that the fuzzer builds it without LMDB (cmake/fuzz.cmake).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <new>

#include "base/error.h"
#include "data/interactions.h"

namespace tandem {

// Records store float32 little-endian (docs/data-format.md); the copy below is a plain memcpy.
static_assert(std::endian::native == std::endian::little, "records are little-endian");

namespace {
// What the size limits below tell the user: the likely cause and the options that bound it.
constexpr const char* kDamagedLine =
    "(a feature index or a sequence that long is more likely a damaged line; give --length and "
    "--features to bound them)";
}  // namespace

std::int64_t decode_interaction(const RawSample& s, float* out) {
    // As LmdbSource names a damaged record: "users_db: record '00000007 u7' is ...".
    const std::string where = (s.origin.empty() ? "" : s.origin + ": ") + "record '" + s.key + "'";
    TANDEM_CHECK_AS(CorruptSampleError, s.encoding == Encoding::interaction)
        << where << " is a " << encoding_name(s.encoding)
        << " image, not an interaction example (tandem import-interactions writes those)";
    const std::size_t width = std::size_t(s.height) + s.width;
    TANDEM_CHECK_AS(CorruptSampleError, s.bytes.size() == width * sizeof(float))
        << where << " holds " << s.bytes.size() << " bytes, not the " << width * sizeof(float)
        << " of " << s.height << " items and " << s.width << " features";
    std::memcpy(out, s.bytes.data(), s.bytes.size());
    // The largest stored id is the largest item id + 1 (0 pads), exact in float32.
    constexpr float kLargestStored = float(kMaxInteractionWidth - 1);
    std::int64_t largest = 0;
    for (std::size_t j = 0; j < s.height; ++j) {
        const float v = out[j];
        TANDEM_CHECK_AS(CorruptSampleError, v >= 0 && v <= kLargestStored && v == std::floor(v))
            << where << " is damaged: item " << j + 1 << " is " << v
            << ", not a stored item id (a whole number in [0, " << kLargestStored << "])";
        largest = std::max(largest, std::int64_t(v));
    }
    for (std::size_t j = s.height; j < width; ++j)
        TANDEM_CHECK_AS(CorruptSampleError, std::isfinite(out[j]))
            << where << " is damaged: feature " << j - s.height << " is " << out[j];
    return largest;
}

void check_interaction_shape(const InteractionShape& s) {
    TANDEM_CHECK_AS(ConfigError, s.length >= 0 && s.length <= kMaxInteractionWidth)
        << "interaction length must be in [0, " << kMaxInteractionWidth << "], got " << s.length;
    TANDEM_CHECK_AS(ConfigError, s.features >= 0 && s.features <= kMaxInteractionWidth)
        << "interaction features must be in [0, " << kMaxInteractionWidth << "], got "
        << s.features;
}

InteractionSet layout_interactions(const std::vector<InteractionLine>& lines,
                                   const std::string& name, const InteractionShape& shape) {
    check_interaction_shape(shape);
    InteractionSet set;
    set.length = shape.length, set.features = shape.features;
    for (const InteractionLine& l : lines) {
        if (shape.length == 0) set.length = std::max<std::int64_t>(set.length, l.items.size());
        if (shape.features == 0)
            for (const auto& [index, v] : l.features)
                set.features = std::max(set.features, index + 1);
    }
    TANDEM_CHECK_AS(ConfigError, set.width() > 0)
        << name << " has no item and no feature: nothing for a net to read";
    TANDEM_CHECK_AS(DataError, set.width() <= kMaxInteractionWidth)
        << name << ": samples of " << set.length << " items and " << set.features
        << " features are wider than " << kMaxInteractionWidth << " values " << kDamagedLine;
    const auto width = std::size_t(set.width());
    TANDEM_CHECK_AS(DataError,
                    double(lines.size()) * double(width) <= double(kMaxInteractionValues))
        << name << ": " << lines.size() << " examples of " << width << " values are more than the "
        << kMaxInteractionValues << " values a set is laid out in " << kDamagedLine;
    try {
        set.samples.assign(lines.size() * width, 0.0f);
    } catch (const std::bad_alloc&) {
        TANDEM_THROW(DataError) << name << ": " << lines.size() << " examples of " << width
                                << " values do not fit in this machine's memory";
    }
    for (std::size_t n = 0; n < lines.size(); ++n) {
        const InteractionLine& l = lines[n];
        float* row = set.samples.data() + n * width;
        // The last `length` items, right-aligned: the newest at the end, padding in front.
        const std::size_t keep = std::min<std::size_t>(l.items.size(), std::size_t(set.length));
        const std::size_t pad = std::size_t(set.length) - keep;
        std::fill(row, row + pad, kPaddingItem);
        for (std::size_t j = 0; j < keep; ++j) {
            const std::int64_t id = l.items[l.items.size() - keep + j] + 1;
            row[pad + j] = static_cast<float>(id);
            set.items = std::max(set.items, id + 1);
        }
        for (const auto& [index, v] : l.features) {
            TANDEM_CHECK_AS(DataError, index < set.features)
                << name << ":" << l.line << ": field 3 (features): index " << index
                << " is past the " << set.features << " features asked (--features)";
            row[std::size_t(set.length + index)] = v;
        }
        set.labels.push_back(l.label);
        set.users.push_back(l.user);
        set.classes = std::max<std::int64_t>(set.classes, std::int64_t(l.label) + 1);
    }
    return set;
}

}  // namespace tandem
