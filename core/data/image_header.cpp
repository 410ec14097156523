#include "data/image_header.h"

#include <algorithm>

#include <webp/decode.h>

namespace tandem {
namespace {

// `n` bytes at `at` as an unsigned number, most significant first or last; none past the end.
std::optional<std::uint64_t> read(const std::string& b, std::size_t at, int n, bool big_endian) {
    if (at > b.size() || b.size() - at < static_cast<std::size_t>(n)) return std::nullopt;
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
        const auto byte = static_cast<unsigned char>(
            b[at + static_cast<std::size_t>(big_endian ? i : n - 1 - i)]);
        v = (v << 8) | byte;
    }
    return v;
}

std::optional<ImageSize> png_size(const std::string& b) {
    if (b.size() < 24 || b.compare(12, 4, "IHDR") != 0) return std::nullopt;
    return ImageSize{*read(b, 20, 4, true), *read(b, 16, 4, true)};
}

// JPEG markers: FF xx, then (except the standalone ones) a 2-byte length; start-of-frame
// markers C0-CF (but C4, C8, CC) carry precision, height and width. Bytes between markers are
// skipped, as libjpeg skips them (with a warning) to find the next one.
std::optional<ImageSize> jpeg_size(const std::string& b) {
    for (std::size_t at = 2; at + 3 < b.size();) {
        if (static_cast<unsigned char>(b[at]) != 0xFF) {
            ++at;
            continue;
        }
        const auto marker = static_cast<unsigned char>(b[at + 1]);
        if (marker == 0xFF) {  // fill byte
            ++at;
            continue;
        }
        if (marker == 0x00) {  // a stuffed FF: no marker, skipped as libjpeg skips it (the fuzzer's
                               // third find)
            at += 2;
            continue;
        }
        if (marker == 0xD9 || marker == 0xDA) return std::nullopt;  // end, or scan data: no frame
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {
            at += 2;
            continue;
        }
        const std::size_t length = *read(b, at + 2, 2, true);
        const bool frame =
            marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
        if (frame && at + 9 <= b.size())
            return ImageSize{*read(b, at + 5, 2, true), *read(b, at + 7, 2, true)};
        at += 2 + length;
    }
    return std::nullopt;
}

// After the 14-byte file header, the info header: 12 bytes (OS/2: 16-bit width and height) or
// 40 and more (signed 32-bit; a negative height is a top-down image).
std::optional<ImageSize> bmp_size(const std::string& b) {
    const auto info = read(b, 14, 4, false);
    if (!info) return std::nullopt;
    const bool core = *info == 12;
    const auto width = read(b, 18, core ? 2 : 4, false),
               height = read(b, core ? 20 : 22, core ? 2 : 4, false);
    if (!width || !height) return std::nullopt;
    const auto magnitude = [&](std::uint64_t v) {
        if (core) return v;
        const auto s = static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
        return s < 0 ? std::uint64_t(-std::int64_t(s)) : std::uint64_t(s);
    };
    return ImageSize{magnitude(*height), magnitude(*width)};
}

// "P6", then width and height as decimal numbers, read as OpenCV 4.6 reads them: before each,
// '#' comments to the end of their line and any other byte that is not a digit are skipped (the
// image fuzzer's "P4 77755j10349" states 77755 x 10349), and the byte after a number's digits
// goes with it, so a '#' there starts no comment ("P4 77750#10349", its next find).
std::optional<ImageSize> pnm_size(const std::string& b) {
    constexpr std::uint64_t kLarge = std::uint64_t(1) << 40;
    std::size_t at = 2;
    auto number = [&]() -> std::optional<std::uint64_t> {
        while (at < b.size() && (b[at] < '0' || b[at] > '9')) {
            if (b[at] == '#')
                while (at < b.size() && b[at] != '\n' && b[at] != '\r') ++at;
            else
                ++at;
        }
        std::uint64_t v = 0;
        const std::size_t first = at;
        for (; at < b.size() && b[at] >= '0' && b[at] <= '9'; ++at)
            v = std::min(kLarge, v * 10 + static_cast<std::uint64_t>(b[at] - '0'));
        if (at == first) return std::nullopt;
        ++at;  // the byte that ends a number is read with it, whatever it is ('#' too)
        return v;
    };
    const auto width = number();
    const auto height = width ? number() : std::nullopt;
    if (!height) return std::nullopt;
    return ImageSize{*height, *width};
}

// The first image file directory's ImageWidth (256) and ImageLength (257) tags, as libtiff
// reads them: the first entry of a tag counts (it ignores a repeated one), and any integer type
// does, held in the entry (8, 16 or 32 bits, signed read as unsigned: a negative size is a huge
// claim) or at the offset it holds (64 bits).
std::optional<ImageSize> tiff_size(const std::string& b) {
    if (b.empty()) return std::nullopt;
    const bool big = b[0] == 'M';
    const auto directory = read(b, 4, 4, big);
    const auto entries = directory ? read(b, *directory, 2, big) : std::nullopt;
    if (!entries) return std::nullopt;
    std::optional<std::uint64_t> width, height;
    for (std::uint64_t i = 0; i < *entries; ++i) {
        const std::uint64_t entry = *directory + 2 + 12 * i;
        const auto tag = read(b, entry, 2, big), type = read(b, entry + 2, 2, big);
        if (!tag || !type) break;
        auto& size = *tag == 256 ? width : height;
        if ((*tag != 256 && *tag != 257) || size) continue;
        switch (*type) {
            case 1:
            case 6: size = read(b, entry + 8, 1, big); break;  // (S)BYTE
            case 3:
            case 8: size = read(b, entry + 8, 2, big); break;  // (S)SHORT
            case 4:
            case 9: size = read(b, entry + 8, 4, big); break;  // (S)LONG
            case 16:
            case 17:  // (S)LONG8
                if (const auto at = read(b, entry + 8, 4, big)) size = read(b, *at, 8, big);
                break;
            default: break;
        }
    }
    if (!width || !height) return std::nullopt;
    return ImageSize{*height, *width};
}

std::optional<ImageSize> webp_size(const std::string& b) {
    WebPBitstreamFeatures features;
    if (WebPGetFeatures(reinterpret_cast<const std::uint8_t*>(b.data()), b.size(), &features) !=
        VP8_STATUS_OK)
        return std::nullopt;
    return ImageSize{static_cast<std::uint64_t>(features.height),
                     static_cast<std::uint64_t>(features.width)};
}

}  // namespace

std::optional<ImageSize> stated_size(const std::string& bytes, ImageFormat format) {
    switch (format) {
        case ImageFormat::png: return png_size(bytes);
        case ImageFormat::jpeg: return jpeg_size(bytes);
        case ImageFormat::bmp: return bmp_size(bytes);
        case ImageFormat::pnm: return pnm_size(bytes);
        case ImageFormat::tiff: return tiff_size(bytes);
        case ImageFormat::webp: return webp_size(bytes);
        case ImageFormat::unknown: break;
    }
    return std::nullopt;
}

}  // namespace tandem
