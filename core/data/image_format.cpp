#include "data/image_format.h"

#include <cstdint>

#include <webp/decode.h>

namespace tandem {

const char* const kImageFormats = "JPEG, PNG, BMP, PNM (ppm, pgm, pbm), TIFF or WebP";

namespace {

bool starts_with(const std::string& b, const char* prefix, std::size_t n) {
    return b.size() >= n && b.compare(0, n, prefix, n) == 0;
}

// OpenCV's PNM test: 'P', a digit 1-6 (the plain and binary PBM, PGM and PPM), white space.
bool is_pnm(const std::string& b) {
    if (b.size() < 3 || b[0] != 'P' || b[1] < '1' || b[1] > '6') return false;
    const char c = b[2];
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// OpenCV's WebP test is libwebp's own reading of the first 32 bytes; asking the same function
// gives the same answer (a looser "RIFF....WEBP" would let through bytes OpenCV's WebP decoder
// declines, which then go on down its list).
bool is_webp(const std::string& b) {
    constexpr std::size_t kHeader = 32;
    WebPBitstreamFeatures features;
    return b.size() >= kHeader && WebPGetFeatures(reinterpret_cast<const std::uint8_t*>(b.data()),
                                                  kHeader, &features) == VP8_STATUS_OK;
}

}  // namespace

ImageFormat image_format(const std::string& b) {
    if (starts_with(b, "\x89PNG\r\n\x1a\n", 8)) return ImageFormat::png;
    if (starts_with(b, "BM", 2)) return ImageFormat::bmp;
    if (starts_with(b, "\xFF\xD8\xFF", 3)) return ImageFormat::jpeg;
    if (is_webp(b)) return ImageFormat::webp;
    if (is_pnm(b)) return ImageFormat::pnm;
    if (starts_with(b, "II\x2A\x00", 4) || starts_with(b, "MM\x00\x2A", 4))
        return ImageFormat::tiff;
    return ImageFormat::unknown;
}

const char* format_name(ImageFormat format) {
    switch (format) {
        case ImageFormat::png: return "PNG";
        case ImageFormat::jpeg: return "JPEG";
        case ImageFormat::bmp: return "BMP";
        case ImageFormat::pnm: return "PNM";
        case ImageFormat::tiff: return "TIFF";
        case ImageFormat::webp: return "WebP";
        case ImageFormat::unknown: break;
    }
    return "no format Tandem reads";
}

}  // namespace tandem
