// libFuzzer: arbitrary bytes as an image file (the image-folder source: any format OpenCV
// reads, sniffed by its magic), decoded into 0, 1 or 3 channels. A damaged file is a
// CorruptSampleError naming it; it may not crash or hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "data/data_source.h"
#include "data/image_decode.h"

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
    return 0;
}
