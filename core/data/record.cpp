#include "data/record.h"

#include <cstring>

#include "base/error.h"

namespace tandem {
namespace {

constexpr char kMagic[4] = {'T', 'D', 'R', 'C'};

void put_u32(std::string& out, std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

std::uint32_t get_u32(const unsigned char* p) {
    return std::uint32_t(p[0]) | (std::uint32_t(p[1]) << 8) | (std::uint32_t(p[2]) << 16) |
           (std::uint32_t(p[3]) << 24);
}

}  // namespace

std::string_view encoding_name(Encoding encoding) {
    switch (encoding) {
        case Encoding::raw: return "raw";
        case Encoding::png: return "png";
        case Encoding::jpeg: return "jpeg";
        case Encoding::interaction: return "interaction";
        case Encoding::other: return "other";
    }
    return "unknown";
}

Encoding parse_encoding(std::string_view name) {
    if (name == "raw") return Encoding::raw;
    if (name == "png") return Encoding::png;
    if (name == "jpeg" || name == "jpg") return Encoding::jpeg;
    TANDEM_THROW(ConfigError) << "unknown encoding '" << name << "' (known: jpeg, png, raw)";
}

std::uint64_t interaction_payload_size(const RecordHeader& h) {
    return (std::uint64_t(h.height) + h.width) * sizeof(float);
}

std::string encode_record(const RecordHeader& h, std::span<const unsigned char> payload) {
    TANDEM_CHECK_AS(ConfigError, h.encoding != Encoding::other)
        << "records are raw, png or jpeg; re-encode other formats";
    TANDEM_CHECK_AS(ConfigError, h.label >= 0) << "record label " << h.label << " is negative";
    TANDEM_CHECK_AS(ConfigError, h.channels == 1 || h.channels == 3)
        << "records hold 1 or 3 channels, got " << h.channels;
    TANDEM_CHECK_AS(ConfigError, payload.size() <= 0xFFFFFFFFu)
        << "a record payload of " << payload.size() << " bytes is over 4 GiB";
    if (h.encoding == Encoding::raw)
        TANDEM_CHECK_AS(ConfigError, payload.size() == std::size_t(h.height) * h.width * h.channels)
            << "raw record of " << h.height << "x" << h.width << "x" << h.channels << " with "
            << payload.size() << " bytes";
    if (h.encoding == Encoding::interaction)
        TANDEM_CHECK_AS(ConfigError,
                        h.channels == 1 && payload.size() == interaction_payload_size(h))
            << "interaction record of " << h.height << " items and " << h.width << " features with "
            << payload.size() << " bytes (and " << h.channels << " channels)";
    std::string out(kRecordHeaderSize, '\0');
    std::memcpy(out.data(), kMagic, 4);
    out[4] = static_cast<char>(kRecordVersion & 0xFF);
    out[5] = static_cast<char>(kRecordVersion >> 8);
    out[6] = static_cast<char>(h.encoding);
    put_u32(out, 8, static_cast<std::uint32_t>(h.label));
    put_u32(out, 12, h.height);
    put_u32(out, 16, h.width);
    put_u32(out, 20, h.channels);
    put_u32(out, 24, static_cast<std::uint32_t>(payload.size()));
    out.append(reinterpret_cast<const char*>(payload.data()), payload.size());
    return out;
}

RecordView decode_record(std::span<const unsigned char> bytes, std::string_view key) {
    TANDEM_CHECK_AS(DataError, bytes.size() >= kRecordHeaderSize)
        << "record '" << key << "' is truncated: " << bytes.size() << " bytes, shorter than the "
        << kRecordHeaderSize << "-byte header";
    const unsigned char* p = bytes.data();
    TANDEM_CHECK_AS(DataError, std::memcmp(p, kMagic, 4) == 0)
        << "record '" << key << "' is not a Tandem record (bad magic; see docs/data-format.md)";
    const unsigned version = p[4] | (unsigned(p[5]) << 8);
    TANDEM_CHECK_AS(DataError, version == kRecordVersion)
        << "record '" << key << "' has format version " << version << ", this build reads "
        << kRecordVersion;
    TANDEM_CHECK_AS(DataError, p[6] <= 3)
        << "record '" << key << "' has unknown encoding code " << unsigned(p[6]);
    RecordView view;
    view.header.encoding = static_cast<Encoding>(p[6]);
    view.header.label = static_cast<std::int32_t>(get_u32(p + 8));
    view.header.height = get_u32(p + 12);
    view.header.width = get_u32(p + 16);
    view.header.channels = get_u32(p + 20);
    const std::uint32_t length = get_u32(p + 24);
    TANDEM_CHECK_AS(DataError, view.header.label >= 0)
        << "record '" << key << "' has a negative label " << view.header.label;
    TANDEM_CHECK_AS(DataError, view.header.channels == 1 || view.header.channels == 3)
        << "record '" << key << "' has " << view.header.channels << " channels (1 or 3 expected)";
    const std::size_t have = bytes.size() - kRecordHeaderSize;
    TANDEM_CHECK_AS(DataError, have == length)
        << "record '" << key << "' is " << (have < length ? "truncated" : "oversized")
        << ": header promises " << length << " bytes of payload, found " << have;
    if (view.header.encoding == Encoding::raw)
        TANDEM_CHECK_AS(
            DataError,
            std::uint64_t(view.header.height) * view.header.width * view.header.channels == length)
            << "record '" << key << "' is raw " << view.header.height << "x" << view.header.width
            << "x" << view.header.channels << " but holds " << length << " bytes";
    if (view.header.encoding == Encoding::interaction)
        TANDEM_CHECK_AS(
            DataError, view.header.channels == 1 && interaction_payload_size(view.header) == length)
            << "record '" << key << "' is an interaction of " << view.header.height << " items and "
            << view.header.width << " features in " << view.header.channels
            << " channel(s) but holds " << length << " bytes";
    view.payload = bytes.subspan(kRecordHeaderSize);
    return view;
}

}  // namespace tandem
