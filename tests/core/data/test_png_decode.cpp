// PNG samples are decoded by libpng with our own error and warning handlers (issue 19): damage
// that passes the chunk check (a bad zlib stream or filter byte under valid CRCs, a malformed
// ancillary chunk libpng only warns about) is our error or decodes, libpng prints nothing, and
// a valid PNG decodes to the pixels cv::imdecode gives. Through OpenCV, libpng printed its
// complaints on stderr ("libpng error: IDAT: incorrect header check").
#include <gtest/gtest.h>
#include <png.h>

#include <opencv2/core.hpp>
#include <random>

#include "base/error.h"
#include "data/image_decode.h"
#include "data/png_check.h"
#include "data/png_decode.h"
#include "data_fixtures.h"
#include "png_fixtures.h"

namespace tandem::test {
namespace {

// `bytes` decoded as the PNG file 'cat.png' in 3 channels; fails the test if anything was
// printed on stderr or the bytes do not decode.
cv::Mat decode_quietly(const std::string& bytes) {
    RawSample s;
    s.key = "cat.png";
    s.encoding = Encoding::png;
    s.bytes = bytes;
    testing::internal::CaptureStderr();
    cv::Mat image;
    try {
        image = decode_image(s, 3);
    } catch (const CorruptSampleError& e) {
        ADD_FAILURE() << e.what();
    }
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "") << "the decoder printed on stderr";
    return image;
}

bool same_pixels(const cv::Mat& a, const cv::Mat& b) {
    return a.size == b.size && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

TEST(PngDecode, BadPixelStreamUnderValidCrcsIsOurError) {
    const std::string rows("\0\1\2\3\0\4\5\6", 8);
    ASSERT_EQ(decode_error(grey_png(rows)), "(decoded)");

    // The zlib header of the IDAT data (from byte 41) damaged, the CRC made valid: the chunk
    // check passes, libpng printed "libpng error: IDAT: incorrect header check".
    std::string header = grey_png(rows);
    header[41] ^= 0x01;
    fix_crcs(header);
    ASSERT_EQ(png_problem(header, PngCheck::chunks), "");
    const std::string e1 = decode_error(header);
    EXPECT_HAS(e1, "cannot decode image 'cat.png' (png, ");
    EXPECT_HAS(e1, "its compressed pixel data is damaged (zlib: incorrect header check)");

    // Inside the deflate data (here it inflates into a row libpng refuses).
    std::string stream = grey_png(rows);
    stream[41 + 3] ^= 0x55;
    fix_crcs(stream);
    EXPECT_HAS(decode_error(stream), "cannot decode image 'cat.png' (png, 73 bytes): ");

    // Row 2's filter type 7 (PNG has 0 to 4): "libpng error: bad adaptive filter value".
    std::string filter = rows;
    filter[4] = 7;
    ASSERT_EQ(png_problem(grey_png(filter), PngCheck::chunks), "");
    EXPECT_HAS(decode_error(grey_png(filter)),
               "cannot decode image 'cat.png' (png, 73 bytes): a row of its pixel data has an "
               "unknown filter type (PNG has 0 to 4)");

    // The pixel data cut short, or longer than IHDR states.
    EXPECT_HAS(decode_error(grey_png(rows.substr(0, 6))), "its pixel data ends early");
    EXPECT_EQ(decode_error(grey_png(rows + std::string("\0\7\7\7", 4))), "(decoded)")
        << "libpng reads the rows IHDR states and only warns about the rest";
}

// Malformed ancillary chunks, their CRCs valid: libpng skips them with a warning it printed
// ("libpng warning: iCCP: ..."); the image decodes as it would without them.
TEST(PngDecode, MalformedAncillaryChunksDecodeQuietly) {
    const std::string good = encode_png(pattern_image(1, 9, 7, 3));
    const cv::Mat expected = decode_quietly(good);
    ASSERT_FALSE(expected.empty());
    // An ICC profile whose compressed data is no zlib stream.
    const std::string iccp = with_chunk(
        good, png_chunk("iCCP", std::string("ICC profile\0\0", 13) + "not a zlib stream"));
    // A zlib stream holding a 132-byte profile header of zeros but its length (no 'acsp').
    std::string header(132, '\0');
    put_u32(header, 0, 132);
    const std::string profile = with_chunk(
        good, png_chunk("iCCP", std::string("ICC profile\0\0", 13) + zlib_compress(header)));
    // Chromaticities over 2^31, and all zero (a white point at the origin).
    const std::string chrm = with_chunk(good, png_chunk("cHRM", std::string(32, '\xff')));
    const std::string zero = with_chunk(good, png_chunk("cHRM", std::string(32, '\0')));
    for (const std::string& bad : {iccp, profile, chrm, zero}) {
        ASSERT_EQ(png_problem(bad, PngCheck::pixels), "") << "our check lets it through";
        EXPECT_TRUE(same_pixels(decode_quietly(bad), expected));
    }
}

// A PNG as libpng writes it: random samples (every value possible), a palette of 2^depth
// random colours, a tRNS chunk if asked.
struct PngImage {
    int depth = 8, colour = PNG_COLOR_TYPE_RGB;
    bool interlaced = false, transparency = false;
    int width = 13, height = 7;  // odd, so that Adam7's passes are uneven
};

void append(png_structp png, png_bytep data, png_size_t n) {
    static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<char*>(data), n);
}
void no_flush(png_structp) {}

std::string write_png(const PngImage& p, unsigned seed) {
    std::mt19937 rng(seed);
    auto random = [&](int bits) { return static_cast<png_uint_16>(rng() & ((1u << bits) - 1)); };
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    png_infop info = png_create_info_struct(png);
    std::string out;
    png_set_write_fn(png, &out, append, no_flush);
    png_set_IHDR(png, info, png_uint_32(p.width), png_uint_32(p.height), p.depth, p.colour,
                 p.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    std::vector<png_color> palette(std::size_t(1) << p.depth);
    for (png_color& c : palette)
        c = {png_byte(random(8)), png_byte(random(8)), png_byte(random(8))};
    if (p.colour == PNG_COLOR_TYPE_PALETTE)
        png_set_PLTE(png, info, palette.data(), static_cast<int>(palette.size()));
    std::vector<png_byte> alpha(palette.size() / 2 + 1);
    for (png_byte& a : alpha) a = png_byte(random(8));
    png_color_16 key{0, random(p.depth), random(p.depth), random(p.depth), random(p.depth)};
    if (p.transparency) png_set_tRNS(png, info, alpha.data(), static_cast<int>(alpha.size()), &key);
    png_write_info(png, info);
    std::vector<png_byte> pixels(png_get_rowbytes(png, info) * std::size_t(p.height));
    for (png_byte& b : pixels) b = png_byte(random(8));
    std::vector<png_bytep> rows;
    for (int y = 0; y < p.height; ++y)
        rows.push_back(pixels.data() + std::size_t(y) * png_get_rowbytes(png, info));
    png_write_image(png, rows.data());
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
    return out;
}

std::string be32(std::uint32_t v) {
    std::string b(4, '\0');
    put_u32(b, 0, v);
    return b;
}

// An eXIf chunk stating `orientation`, in Intel (little-endian) or Motorola byte order.
std::string exif_chunk(int orientation, bool intel) {
    std::string tiff = intel ? std::string("II*\0\x08\0\0\0\x01\0\x12\x01\x03\0\x01\0\0\0", 18)
                             : std::string("MM\0*\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01", 18);
    tiff += intel ? std::string{char(orientation), '\0', '\0', '\0'}
                  : std::string{'\0', char(orientation), '\0', '\0'};
    return png_chunk("eXIf", tiff + std::string(4, '\0'));
}

// Every kind of PNG decodes to the pixels cv::imdecode gives, in 0, 1 and 3 channels: the
// colour types at each bit depth, with and without tRNS, interlaced or not; gamma and colour
// chunks (OpenCV's grey from colour is taken in linear light under a gAMA); eXIf orientations.
TEST(PngDecode, PixelsAreThoseOfOpenCV) {
    std::vector<std::pair<std::string, std::string>> cases;  // (what, bytes)
    const std::pair<int, std::vector<int>> kinds[] = {{PNG_COLOR_TYPE_GRAY, {1, 2, 4, 8, 16}},
                                                      {PNG_COLOR_TYPE_GRAY_ALPHA, {8, 16}},
                                                      {PNG_COLOR_TYPE_RGB, {8, 16}},
                                                      {PNG_COLOR_TYPE_RGB_ALPHA, {8, 16}},
                                                      {PNG_COLOR_TYPE_PALETTE, {1, 2, 4, 8}}};
    unsigned seed = 0;
    for (const auto& [colour, depths] : kinds)
        for (int depth : depths)
            for (bool interlaced : {false, true})
                for (bool transparency : {false, true}) {
                    if (transparency && (colour & PNG_COLOR_MASK_ALPHA) != 0) continue;
                    cases.emplace_back(
                        "colour type " + std::to_string(colour) + ", " + std::to_string(depth) +
                            "-bit" + (interlaced ? ", interlaced" : "") +
                            (transparency ? ", tRNS" : ""),
                        write_png({depth, colour, interlaced, transparency}, ++seed));
                }
    const std::string rgb = write_png({8, PNG_COLOR_TYPE_RGB}, 100);
    const std::string palette = write_png({4, PNG_COLOR_TYPE_PALETTE, true, true}, 101);
    const std::string grey16 = write_png({16, PNG_COLOR_TYPE_GRAY}, 102);
    const std::string rgba16 = write_png({16, PNG_COLOR_TYPE_RGB_ALPHA}, 103);
    for (const std::string& image : {rgb, palette, grey16, rgba16}) {
        cases.emplace_back("gAMA 1.0", with_chunk(image, png_chunk("gAMA", be32(100000))));
        cases.emplace_back("gAMA 1/1.8", with_chunk(image, png_chunk("gAMA", be32(55555))));
        cases.emplace_back("sRGB", with_chunk(with_chunk(image, png_chunk("sRGB", "\1")),
                                              png_chunk("gAMA", be32(45455))));
        std::string chrm;
        for (std::uint32_t v : {31270, 32900, 64000, 33000, 30000, 60000, 15000, 6000})
            chrm += be32(v);
        cases.emplace_back("cHRM", with_chunk(image, png_chunk("cHRM", chrm)));
    }
    {
        RawSample s;
        s.encoding = Encoding::png;
        s.bytes = with_chunk(rgb, exif_chunk(6, true));
        EXPECT_EQ(decode_image(s, 3).size(), cv::Size(7, 13)) << "orientation 6: turned";
    }
    for (int orientation = 0; orientation <= 9; ++orientation)
        for (bool intel : {false, true})
            cases.emplace_back("eXIf orientation " + std::to_string(orientation),
                               with_chunk(rgb, exif_chunk(orientation, intel)));

    for (const auto& [what, bytes] : cases)
        for (int channels : {0, 1, 3}) {
            const int flag = channels == 1   ? cv::IMREAD_GRAYSCALE
                             : channels == 3 ? cv::IMREAD_COLOR
                                             : cv::IMREAD_ANYCOLOR;
            const cv::Mat opencv =
                cv::imdecode(std::vector<unsigned char>(bytes.begin(), bytes.end()), flag);
            ASSERT_FALSE(opencv.empty()) << what;
            RawSample s;
            s.key = "cat.png";
            s.encoding = Encoding::png;
            s.bytes = bytes;
            testing::internal::CaptureStderr();
            const cv::Mat ours = decode_image(s, channels);
            EXPECT_EQ(testing::internal::GetCapturedStderr(), "") << what;
            EXPECT_TRUE(same_pixels(ours, opencv))
                << what << ", " << channels << " channels: " << ours.size << " x "
                << ours.channels() << " against " << opencv.size << " x " << opencv.channels();
        }
}

// The decoder itself keeps libpng quiet, without the chunk check before it: every flipped bit
// of a PNG (its CRC left wrong, or made valid), every cut, decodes or says why, and nothing is
// printed on stderr.
TEST(PngDecode, LibpngPrintsNothingWhateverTheBytes) {
    const std::string rows("\0\1\2\3\0\4\5\6", 8);
    std::string header = grey_png(rows);
    header[41] ^= 0x01;
    fix_crcs(header);
    std::string problem;
    EXPECT_TRUE(decode_png(header, 3, problem).empty());
    EXPECT_EQ(problem, "its compressed pixel data is damaged (zlib: incorrect header check)");
    std::string crc = grey_png(rows);
    crc[crc.size() - 13] ^= 0x01;  // the IDAT's CRC itself (IEND is the last 12 bytes)
    EXPECT_TRUE(decode_png(crc, 3, problem).empty());
    EXPECT_EQ(problem, "chunk 'IDAT' fails its CRC check");
    EXPECT_TRUE(decode_png(crc.substr(0, 50), 3, problem).empty());
    EXPECT_EQ(problem, "truncated: the data ends before the image does");
    EXPECT_TRUE(decode_png("\x89PNG\r\n\x1a\n not really a PNG file", 3, problem).empty());
    EXPECT_EQ(problem, "the PNG decoder refused it (libpng: [20]rea: invalid chunk type)");

    for (const std::string& good : {write_png({8, PNG_COLOR_TYPE_RGB_ALPHA}, 7),
                                    write_png({2, PNG_COLOR_TYPE_PALETTE, true, true}, 8),
                                    write_png({16, PNG_COLOR_TYPE_GRAY, true}, 9)}) {
        std::vector<std::string> damaged;
        for (std::size_t at = 0; at < good.size(); ++at) {
            damaged.push_back(good.substr(0, at));
            std::string bad = good;
            bad[at] ^= static_cast<char>(1 << (at % 8));
            damaged.push_back(bad);
            fix_crcs(bad);
            damaged.push_back(bad);
        }
        for (const std::string& bytes : damaged)
            for (int channels : {0, 1, 3}) {
                testing::internal::CaptureStderr();
                problem.clear();
                const cv::Mat image = decode_png(bytes, channels, problem);
                ASSERT_EQ(testing::internal::GetCapturedStderr(), "")
                    << "libpng printed, " << bytes.size() << " bytes";
                EXPECT_NE(image.empty(), problem.empty());
            }
    }
}

}  // namespace
}  // namespace tandem::test
