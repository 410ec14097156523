// The record format of Tandem's LMDB databases (docs/data-format.md): a 28-byte little-endian
// header, then the image bytes.
//
//   offset  size  field
//   0       4     magic "TDRC"
//   4       2     version (1)
//   6       1     encoding: 0 raw, 1 png, 2 jpeg, 3 interaction
//   7       1     reserved (0)
//   8       4     label, signed 32-bit, >= 0
//   12      4     height
//   16      4     width
//   20      4     channels (1 or 3)
//   24      4     payload length in bytes
//   28      ...   payload: raw = height x width x channels bytes, rows top to bottom, channels
//                 interleaved in RGB order; png / jpeg = the encoded file; interaction = an
//                 example of interaction data (data/interactions.h): height = the sequence
//                 length L, width = the feature count F, channels = 1, and (L + F) float32
//                 little-endian values, the item ids (shifted by 1, 0 padding) then the features
//
// The shape is stored for encoded images too, so tools can describe a database without
// decoding it; the decoder checks that the image it gets has that shape.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace tandem {

// `other` is any format OpenCV reads, for image files; it never appears in a record.
// `interaction` is not an image: `tandem import-interactions` writes it, T.data.interactions
// reads it, and the image decoder refuses it.
enum class Encoding : std::uint8_t { raw = 0, png = 1, jpeg = 2, interaction = 3, other = 255 };

// The image encodings "raw", "png", "jpeg" (encoding_name also names "interaction");
// ConfigError listing the known names for anything else.
std::string_view encoding_name(Encoding encoding);
Encoding parse_encoding(std::string_view name);

struct RecordHeader {
    Encoding encoding = Encoding::raw;
    std::int32_t label = 0;
    std::uint32_t height = 0;
    std::uint32_t width = 0;
    std::uint32_t channels = 0;
};

inline constexpr std::size_t kRecordHeaderSize = 28;
inline constexpr std::uint16_t kRecordVersion = 1;

// The header followed by `payload`. ConfigError for a raw payload whose size is not
// height x width x channels (an interaction's: (height + width) x 4 bytes, one channel), a
// negative label or a channel count other than 1 or 3.
std::string encode_record(const RecordHeader& header, std::span<const unsigned char> payload);

// A record's header and a view of its payload (into `bytes`). DataError naming `key` when the
// bytes are too short, the magic or version is wrong, the encoding unknown, or the payload
// length does not match what is there ("truncated: header promises 3072 bytes, found 100").
struct RecordView {
    RecordHeader header;
    std::span<const unsigned char> payload;
};
// The payload size an interaction record of `header` must have: (height + width) float32s.
std::uint64_t interaction_payload_size(const RecordHeader& header);

RecordView decode_record(std::span<const unsigned char> bytes, std::string_view key);

}  // namespace tandem
