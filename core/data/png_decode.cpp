#include "data/png_decode.h"

#include <png.h>

#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

namespace tandem {
namespace {

// What libpng's callbacks share with us. Plain data: the error handler jumps out of libpng
// (longjmp), so no frame it leaves may hold anything with a destructor.
struct Source {
    const std::string& bytes;
    std::size_t at = 0;
    bool ran_out = false;       // the bytes ended before libpng was done
    bool reading_rows = false;  // the error came while inflating the pixel data
    char error[200] = "";       // libpng's message
};

void read_bytes(png_structp png, png_bytep out, png_size_t n) {
    auto& source = *static_cast<Source*>(png_get_io_ptr(png));
    if (source.bytes.size() - source.at < n) {
        source.ran_out = true;
        png_error(png, "the data ends early");
    }
    std::memcpy(out, source.bytes.data() + source.at, n);
    source.at += n;
}

void on_error(png_structp png, png_const_charp message) {
    auto& source = *static_cast<Source*>(png_get_error_ptr(png));
    std::snprintf(source.error, sizeof source.error, "%s",
                  message != nullptr ? message : "unknown error");
    png_longjmp(png, 1);
}

// A warning is a chunk libpng skipped or a value it let pass (a malformed iCCP or cHRM, data
// after the last row): the image reads as it does without it, as it did through OpenCV.
void on_warning(png_structp, png_const_charp) {}

// OpenCV's limit on the pixels of an image it decodes (CV_IO_MAX_IMAGE_PIXELS).
constexpr std::uint64_t kMaxPixels = std::uint64_t(1) << 30;

// Our own reasons to stop libpng (through png_error, which unwinds it), said as they are.
constexpr std::string_view kTooLarge = "its IHDR states over 2^30 pixels, more than OpenCV reads";
constexpr std::string_view kRowSize = "its rows do not come out at the size the image has";

// libpng's reader and what it reads into. Lives in decode_png, above the jump.
struct Read {
    png_structp png = nullptr;
    png_infop info = nullptr, end = nullptr;
    int channels = 0;  // asked for: 0, 1 or 3
    cv::Mat image;
    std::vector<png_bytep> rows;

    Read() = default;
    Read(const Read&) = delete;
    Read& operator=(const Read&) = delete;
    ~Read() { png_destroy_read_struct(&png, &info, &end); }
};

// The read of OpenCV 4.6's PngDecoder (grfmt_png.cpp, readHeader and readData for an 8-bit
// image of 1 or 3 channels): the same transforms in the same order, so the same pixels.
// libpng's errors jump out of here: its locals are plain values only.
void read_image(Read& r, Source& source) {
    png_read_info(r.png, r.info);
    png_uint_32 width = 0, height = 0;
    int depth = 0, colour = 0;
    png_get_IHDR(r.png, r.info, &width, &height, &depth, &colour, nullptr, nullptr, nullptr);
    if (std::uint64_t(width) * height > kMaxPixels) png_error(r.png, kTooLarge.data());
    // IMREAD_ANYCOLOR keeps one channel for plain grey only: grey with alpha is colour to OpenCV.
    const bool in_colour = r.channels == 3 || (r.channels == 0 && colour != PNG_COLOR_TYPE_GRAY);
    r.image.create(static_cast<int>(height), static_cast<int>(width),
                   in_colour ? CV_8UC3 : CV_8UC1);
    // (OpenCV also calls png_set_swap for 8-bit images, which does nothing to 8-bit samples.)
    if (depth == 16) png_set_strip_16(r.png);
    png_set_strip_alpha(r.png);
    if (colour == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(r.png);
    if ((colour & PNG_COLOR_MASK_COLOR) == 0 && depth < 8) png_set_expand_gray_1_2_4_to_8(r.png);
    if ((colour & PNG_COLOR_MASK_COLOR) != 0 && in_colour)
        png_set_bgr(r.png);
    else if (in_colour)
        png_set_gray_to_rgb(r.png);
    else
        png_set_rgb_to_gray(r.png, PNG_ERROR_ACTION_NONE, 0.299, 0.587);
    png_set_interlace_handling(r.png);
    png_read_update_info(r.png, r.info);
    if (png_get_rowbytes(r.png, r.info) != r.image.step[0]) png_error(r.png, kRowSize.data());
    r.rows.resize(height);
    for (png_uint_32 y = 0; y < height; ++y) r.rows[y] = r.image.ptr(static_cast<int>(y));
    source.reading_rows = true;
    png_read_image(r.png, r.rows.data());
    source.reading_rows = false;
    png_read_end(r.png, r.end);
}

// read_image under libpng's error jump: false when libpng reported an error.
bool read_guarded(Read& r, Source& source) {
    if (setjmp(png_jmpbuf(r.png)) != 0) return false;
    read_image(r, source);
    return true;
}

// libpng's reason in our words, in those of png_check.h where it finds the same damage.
std::string reason(const Source& source) {
    const std::string_view m = source.error;
    if (source.ran_out) return "truncated: the data ends before the image does";
    if (m == kTooLarge || m == kRowSize) return std::string(m);
    if (m == "Not enough image data")
        return "its pixel data ends early (fewer rows than its IHDR states)";
    if (m == "bad adaptive filter value")
        return "a row of its pixel data has an unknown filter type (PNG has 0 to 4)";
    if (m.size() > 11 && m.substr(m.size() - 11) == ": CRC error")
        return "chunk '" + std::string(m.substr(0, m.size() - 11)) + "' fails its CRC check";
    // Inflating the rows, libpng's only chunk errors are zlib's (or its own zlib checks).
    if (source.reading_rows && m.substr(0, 6) == "IDAT: ")
        return "its compressed pixel data is damaged (zlib: " + std::string(m.substr(6)) + ")";
    return "the PNG decoder refused it (libpng: " + std::string(m) + ")";
}

// The orientation an eXIf chunk states (TIFF tag 0x0112), 0 when none: read as OpenCV's
// ExifReader reads it (the first IFD's first such entry, its value at the entry's byte 8, in
// the stream's byte order), where a cut stream ends the search.
int exif_orientation(const unsigned char* d, std::size_t n) {
    if (n < 8 || d[0] != d[1] || (d[0] != 'I' && d[0] != 'M')) return 0;
    const bool intel = d[0] == 'I';
    auto u16 = [&](std::size_t at) {
        return intel ? unsigned(d[at]) | unsigned(d[at + 1]) << 8
                     : unsigned(d[at]) << 8 | unsigned(d[at + 1]);
    };
    if (u16(2) != 0x2A) return 0;
    const std::size_t ifd = intel ? std::size_t(u16(4)) | std::size_t(u16(6)) << 16
                                  : std::size_t(u16(4)) << 16 | std::size_t(u16(6));
    if (ifd > n || n - ifd < 2) return 0;
    const unsigned entries = u16(ifd);
    for (std::size_t i = 0, at = ifd + 2; i < entries && at + 10 <= n; ++i, at += 12)
        if (u16(at) == 0x0112) return static_cast<int>(u16(at + 8));
    return 0;
}

// OpenCV's ExifTransform: what each orientation asks for to show the image upright.
void orient(cv::Mat& image, int orientation) {
    if (orientation >= 5 && orientation <= 8) cv::transpose(image, image);
    switch (orientation) {
        case 2:
        case 6: cv::flip(image, image, 1); break;
        case 3:
        case 7: cv::flip(image, image, -1); break;
        case 4:
        case 8: cv::flip(image, image, 0); break;
        default: break;
    }
}

}  // namespace

cv::Mat decode_png(const std::string& bytes, int channels, std::string& problem) {
    Source source{bytes};
    Read r;
    r.channels = channels;
    r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &source, on_error, on_warning);
    if (r.png != nullptr) r.info = png_create_info_struct(r.png);
    if (r.info != nullptr) r.end = png_create_info_struct(r.png);
    if (r.end == nullptr) {
        problem = "the PNG decoder could not start (libpng: out of memory)";
        return {};
    }
    png_set_read_fn(r.png, &source, read_bytes);
    const bool read = read_guarded(r, source);
    int orientation = 0;
#ifdef PNG_eXIf_SUPPORTED
    png_uint_32 exif_size = 0;
    png_bytep exif = nullptr;
    // In the image's header or after its pixel data (read by png_read_end), as OpenCV looks.
    if (read && png_get_valid(r.png, r.info, PNG_INFO_eXIf) != 0)
        png_get_eXIf_1(r.png, r.info, &exif_size, &exif);
    else if (read && png_get_valid(r.png, r.end, PNG_INFO_eXIf) != 0)
        png_get_eXIf_1(r.png, r.end, &exif_size, &exif);
    if (exif != nullptr) orientation = exif_orientation(exif, exif_size);
#endif
    if (!read) {
        problem = reason(source);
        return {};
    }
    orient(r.image, orientation);
    return r.image;
}

}  // namespace tandem
