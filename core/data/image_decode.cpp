#include "data/image_decode.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "data/image_format.h"
#include "data/image_header.h"
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
// allocate whatever it states (data/image_header.h).
constexpr std::uint64_t kMaxPixels = std::uint64_t(1) << 26;  // 8192 x 8192

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
    // Only the formats we take reach a decoder (data/image_format.h); a record is in the one it
    // states. A PNG record without the signature is left to the PNG check, which says so.
    const ImageFormat format = image_format(s.bytes);
    const bool png = s.encoding == Encoding::png || format == ImageFormat::png;
    if (!png && format == ImageFormat::unknown)
        corrupt(s, std::string("not an image in a format Tandem reads (") + kImageFormats + ")");
    if (s.encoding == Encoding::jpeg && format != ImageFormat::jpeg)
        corrupt(s, std::string("the record states jpeg, its bytes are ") + format_name(format));
    if (s.encoding == Encoding::jpeg && !has_jpeg_end(s.bytes))
        corrupt(s, "truncated (no end-of-image marker)");
    // The size a header states is checked before any decoder allocates it; a header that states
    // none is damaged (a PNG's is left to the PNG check, which names what is wrong with it).
    const auto stated = stated_size(s.bytes, png ? ImageFormat::png : format);
    if (!stated && !png)
        corrupt(s, std::string("its ") + format_name(format) + " header states no size");
    if (stated) {
        if (stated->width != 0 && stated->height > kMaxPixels / stated->width)
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
