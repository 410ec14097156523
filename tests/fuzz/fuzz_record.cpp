// libFuzzer: arbitrary bytes as an LMDB record (docs/data-format.md), decoded the way the
// loader decodes it: the record header, then the image (raw, PNG or JPEG) into 0, 1 or 3
// channels. A damaged record may be refused with a DataError (CorruptSampleError included);
// it may not crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/error.h"
#include "data/data_source.h"
#include "data/image_decode.h"
#include "data/record.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tandem;
    try {
        const RecordView view = decode_record(std::span<const unsigned char>(data, size), "fuzz");
        RawSample s;
        s.key = "fuzz";
        s.label = view.header.label;
        s.encoding = view.header.encoding;
        s.height = view.header.height;
        s.width = view.header.width;
        s.channels = view.header.channels;
        s.bytes.assign(reinterpret_cast<const char*>(view.payload.data()), view.payload.size());
        // The record's shape bounds what decoding may allocate: skip huge claims (their check is
        // the decoder's, tested in test_image_decode; here they only cost memory).
        if (std::uint64_t(s.height) * s.width > (1u << 22)) return 0;
        for (int channels : {0, 1, 3}) (void)decode_image(s, channels);
    } catch (const DataError&) {
    }
    return 0;
}
