#include "data/image_decode.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "data/image_format.h"
#include "data/png_check.h"
#include "data/png_decode.h"

namespace tandem {
namespace {

// Names the database too for a record ("db: cannot decode image '00000005' ..."), a file by
// its path (issue 19).
[[noreturn]] void corrupt(const RawSample& s, const std::string& why) {
    throw CorruptSampleError((s.origin.empty() ? "" : s.origin + ": ") + "cannot decode image '" +
                             s.key + "' (" + std::string(encoding_name(s.encoding)) + ", " +
                             std::to_string(s.bytes.size()) + " bytes): " + why);
}

// libjpeg decodes a truncated file into a grey-filled image with only a warning on stderr, so
// truncation is caught here: a complete JPEG ends with FF D9 (a little trailing data allowed).
bool has_jpeg_end(const std::string& b) {
    const std::size_t from = b.size() > 1024 ? b.size() - 1024 : 0;
    for (std::size_t i = b.size(); i-- > from + 1;)
        if (static_cast<unsigned char>(b[i - 1]) == 0xFF &&
            static_cast<unsigned char>(b[i]) == 0xD9)
            return true;
    return false;
}

cv::Mat to_channels(cv::Mat image, int channels) {
    if (channels == 0 || image.channels() == channels) return image;
    cv::Mat out;
    cv::cvtColor(image, out, channels == 3 ? cv::COLOR_GRAY2BGR : cv::COLOR_BGR2GRAY);
    return out;
}

// The most pixels an encoded image may claim: its header alone would otherwise make the decoder
// allocate whatever it states (a damaged JPEG claiming 65535 x 65535 asks for 12 GB).
constexpr std::uint64_t kMaxPixels = std::uint64_t(1) << 26;  // 8192 x 8192

struct Size2 {
    std::uint32_t height = 0, width = 0;
};

std::uint32_t big_endian(const std::string& b, std::size_t at, int bytes) {
    std::uint32_t v = 0;
    for (int i = 0; i < bytes; ++i)
        v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
    return v;
}

bool has_png_signature(const std::string& b) {
    return b.size() >= 8 && b.compare(0, 8, "\x89PNG\r\n\x1a\n", 8) == 0;
}

// The size a PNG's IHDR or a JPEG's start-of-frame states, read before decoding; none when the
// bytes are neither or the header is not found.

std::optional<Size2> stated_size(const std::string& b) {
    if (b.size() >= 24 && has_png_signature(b) && b.compare(12, 4, "IHDR") == 0)
        return Size2{big_endian(b, 20, 4), big_endian(b, 16, 4)};
    if (b.size() < 4 || static_cast<unsigned char>(b[0]) != 0xFF ||
        static_cast<unsigned char>(b[1]) != 0xD8)
        return std::nullopt;
    // JPEG markers: FF xx, then (except the standalone ones) a 2-byte length; start-of-frame
    // markers C0-CF (but C4, C8, CC) carry precision, height and width. Bytes between markers
    // are skipped, as libjpeg skips them (with a warning) to find the next one.
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
        if (marker == 0xD9 || marker == 0xDA)
            return std::nullopt;  // end, or scan data: no frame seen
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {
            at += 2;
            continue;
        }
        const std::size_t length = big_endian(b, at + 2, 2);
        const bool frame =
            marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
        if (frame && at + 9 <= b.size())
            return Size2{big_endian(b, at + 5, 2), big_endian(b, at + 7, 2)};
        at += 2 + length;
    }
    return std::nullopt;
}

}  // namespace

cv::Mat decode_image(const RawSample& s, int channels, ImageCheck check) {
    // Not damage but the wrong kind of database: an error that stops, not a sample to skip.
    TANDEM_CHECK_AS(DataError, s.encoding != Encoding::interaction)
        << "record '" << s.key << "'" << (s.origin.empty() ? "" : " of " + s.origin)
        << " holds an interaction example, not an image: read the database with "
           "T.data.interactions (docs/data-format.md)";
    if (s.encoding == Encoding::raw) {
        if (s.bytes.size() != std::size_t(s.height) * s.width * s.channels || s.height == 0 ||
            s.width == 0 || (s.channels != 1 && s.channels != 3))
            corrupt(s, "raw bytes do not match " + std::to_string(s.height) + "x" +
                           std::to_string(s.width) + "x" + std::to_string(s.channels));
        const cv::Mat view(static_cast<int>(s.height), static_cast<int>(s.width),
                           CV_8UC(static_cast<int>(s.channels)), const_cast<char*>(s.bytes.data()));
        cv::Mat image;
        if (s.channels == 3)
            cv::cvtColor(view, image, cv::COLOR_RGB2BGR);  // raw records are RGB
        else
            image = view.clone();
        return to_channels(image, channels);
    }
    // A record states its channel count; a file keeps what it has unless asked otherwise.
    channels = channels != 0 ? channels : static_cast<int>(s.channels);
    if (s.bytes.empty()) corrupt(s, "empty");
    if (s.encoding == Encoding::jpeg && !has_jpeg_end(s.bytes))
        corrupt(s, "truncated (no end-of-image marker)");
    if (const auto stated = stated_size(s.bytes)) {
        if (std::uint64_t(stated->height) * stated->width > kMaxPixels)
            corrupt(s, "its header claims " + std::to_string(stated->height) + "x" +
                           std::to_string(stated->width) + " pixels, more than the " +
                           std::to_string(kMaxPixels) + " an image may have");
        if (s.height != 0 && (stated->height != s.height || stated->width != s.width))
            corrupt(s, "its header states " + std::to_string(stated->height) + "x" +
                           std::to_string(stated->width) + ", the record " +
                           std::to_string(s.height) + "x" + std::to_string(s.width));
    }
    // A PNG is decoded by libpng with our handlers (data/png_decode.h), so libpng prints nothing
    // whatever the bytes. Its chunks are checked first all the same: the check names the chunk
    // and byte that are wrong ("chunk 'IDAT' at byte 41 fails its CRC check") where libpng
    // would say "IDAT: CRC error" (issue 19).
    const bool png = s.encoding == Encoding::png || has_png_signature(s.bytes);
    // Any other format goes to OpenCV only when it is one we take (data/image_format.h): the
    // decoders OpenCV would otherwise try include one that aborts the process.
    if (!png && opencv_image_format(s.bytes) == nullptr)
        corrupt(s, std::string("not an image in a format Tandem reads (") + kImageFormats + ")");
    if (png)
        if (const std::string why = png_problem(
                s.bytes, check == ImageCheck::full ? PngCheck::pixels : PngCheck::chunks);
            !why.empty())
            corrupt(s, why);
    cv::Mat image;
    try {
        if (png) {
            std::string why;
            image = decode_png(s.bytes, channels == 1 || channels == 3 ? channels : 0, why);
            if (image.empty()) corrupt(s, why);
        } else {
            const int flags = channels == 1   ? cv::IMREAD_GRAYSCALE
                              : channels == 3 ? cv::IMREAD_COLOR
                                              : cv::IMREAD_ANYCOLOR;
            const cv::Mat buffer(1, static_cast<int>(s.bytes.size()), CV_8UC1,
                                 const_cast<char*>(s.bytes.data()));
            image = cv::imdecode(buffer, flags);
        }
    } catch (const cv::Exception& e) {
        // e.what() is OpenCV's source file, line and assertion: the user needs only its reason.
        corrupt(s, "the image decoder failed (" + e.err + ")");
    }
    if (image.empty()) corrupt(s, "not a readable image");
    if (image.depth() != CV_8U) corrupt(s, "not an 8-bit image");
    if (image.channels() == 4) cv::cvtColor(image, image, cv::COLOR_BGRA2BGR);
    if (s.height != 0 &&
        (std::uint32_t(image.rows) != s.height || std::uint32_t(image.cols) != s.width))
        corrupt(s, "decoded " + std::to_string(image.rows) + "x" + std::to_string(image.cols) +
                       ", the record states " + std::to_string(s.height) + "x" +
                       std::to_string(s.width));
    return to_channels(image, channels);
}

cv::Mat resize_shorter(const cv::Mat& image, int side) {
    const int shorter = std::min(image.rows, image.cols);
    if (side <= 0 || shorter == side) return image;
    const double scale = double(side) / shorter;
    const int h = image.rows == shorter ? side : std::max(1, int(std::lround(image.rows * scale)));
    const int w = image.cols == shorter ? side : std::max(1, int(std::lround(image.cols * scale)));
    cv::Mat out;
    cv::resize(image, out, cv::Size(w, h), 0, 0, scale < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
    return out;
}

}  // namespace tandem
