// The size an encoded image's header states, read before any decoder sees the bytes: decoders
// allocate whatever a header claims (a damaged JPEG claiming 65535 x 65535 asks for 12 GB, the
// image fuzzer's BMP claiming 655368 x 1536 for 3 GB), so the claim is checked first.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "data/image_format.h"

namespace tandem {

struct ImageSize {
    std::uint64_t height = 0, width = 0;
};

// The height and width the header of `bytes`, in `format`, states (a BMP's top-down height
// counted as its size; a PNM number too long for 40 bits as 2^40); none when the header cannot
// be read, and then no decoder is to see the bytes (what it would allocate is unknown).
std::optional<ImageSize> stated_size(const std::string& bytes, ImageFormat format);

}  // namespace tandem
