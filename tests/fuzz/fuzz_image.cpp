// libFuzzer: arbitrary bytes as an image file (the image-folder source: the formats we take,
// sniffed by their magic, data/image_format.h), decoded into 0, 1 or 3 channels. A damaged file is
// a CorruptSampleError naming it; it may not crash or hang. Bytes with a PNG signature also go to
// the PNG decoder directly: the chunk check before it stops nearly every input the fuzzer makes
// (their CRCs fail), and libpng under our handlers must hold up without it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "data/data_source.h"
#include "data/image_decode.h"
#include "data/png_decode.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tandem;
    RawSample s;
    s.key = "fuzz.img";
    s.bytes.assign(reinterpret_cast<const char*>(data), size);
    s.encoding = sniff_encoding(s.bytes);
    for (int channels : {0, 1, 3}) {
        try {
            (void)decode_image(s, channels);
        } catch (const DataError&) {
        }
    }
    // decode_image refuses an IHDR claiming over 2^26 pixels before decoding; here the fuzzer's
    // memory limit is kept by refusing over 2^22 (an IHDR's height and width at bytes 16-23).
    auto u32 = [&](std::size_t at) {
        return std::uint64_t(data[at]) << 24 | std::uint64_t(data[at + 1]) << 16 |
               std::uint64_t(data[at + 2]) << 8 | data[at + 3];
    };
    if (s.encoding == Encoding::png && (size < 24 || u32(16) * u32(20) <= (1u << 22)))
        for (int channels : {0, 1, 3}) {
            std::string problem;
            (void)decode_png(s.bytes, channels, problem);
        }
    return 0;
}
