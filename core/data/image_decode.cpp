#include "data/image_decode.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace tandem {
namespace {

// Names the database too for a record ("db: cannot decode image '00000005' ..."), a file by
// its path (issue 19).
[[noreturn]] void corrupt(const RawSample& s, const std::string& why) {
    throw CorruptSampleError((s.origin.empty() ? "" : s.origin + ": ") + "cannot decode image '" + s.key + "' (" +
                             std::string(encoding_name(s.encoding)) + ", " +
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

}  // namespace

cv::Mat decode_image(const RawSample& s, int channels) {
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
    const int flags = channels == 1   ? cv::IMREAD_GRAYSCALE
                      : channels == 3 ? cv::IMREAD_COLOR
                                      : cv::IMREAD_ANYCOLOR;
    cv::Mat image;
    try {
        const cv::Mat buffer(1, static_cast<int>(s.bytes.size()), CV_8UC1,
                             const_cast<char*>(s.bytes.data()));
        image = cv::imdecode(buffer, flags);
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
