// The formats an encoded image may be in (data/image_format.h) and the size its header states
// (data/image_header.h), both read before any decoder sees the bytes.
#include <gtest/gtest.h>

#include "data/image_header.h"
#include "data_fixtures.h"

namespace tandem::test {
namespace {

std::string encoded(const char* ext, int channels, int height = 9, int width = 7) {
    std::vector<unsigned char> bytes;
    EXPECT_TRUE(cv::imencode(ext, pattern_image(1, height, width, channels), bytes)) << ext;
    return std::string(bytes.begin(), bytes.end());
}

void put_le32(std::string& b, std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
        b[at + static_cast<std::size_t>(i)] = static_cast<char>(v >> (8 * i));
}

}  // namespace

TEST(ImageHeader, EveryFormatWeTakeIsRecognisedAndItsSizeRead) {
    const struct {
        const char* ext;
        int channels;
        ImageFormat format;
    } cases[] = {{".png", 3, ImageFormat::png},   {".jpg", 3, ImageFormat::jpeg},
                 {".bmp", 3, ImageFormat::bmp},   {".bmp", 1, ImageFormat::bmp},
                 {".ppm", 3, ImageFormat::pnm},   {".pgm", 1, ImageFormat::pnm},
                 {".pbm", 1, ImageFormat::pnm},   {".tiff", 3, ImageFormat::tiff},
                 {".tiff", 1, ImageFormat::tiff}, {".webp", 3, ImageFormat::webp}};
    for (const auto& c : cases) {
        const std::string bytes = encoded(c.ext, c.channels);
        EXPECT_EQ(image_format(bytes), c.format) << c.ext;
        const auto size = stated_size(bytes, c.format);
        ASSERT_TRUE(size.has_value()) << c.ext;
        EXPECT_EQ(size->height, 9u) << c.ext;
        EXPECT_EQ(size->width, 7u) << c.ext;
    }
    // A top-down BMP states a negative height; its size is the same.
    std::string bmp = encoded(".bmp", 3);
    put_le32(bmp, 22, static_cast<std::uint32_t>(-9));
    EXPECT_EQ(stated_size(bmp, ImageFormat::bmp)->height, 9u);
    // A big-endian TIFF's directory is read in its own byte order.
    const std::string tiff_be =
        std::string("MM\x00\x2A\x00\x00\x00\x08", 8) + std::string("\x00\x02", 2) +  // two entries
        std::string("\x01\x00\x00\x03\x00\x00\x00\x01\x00\x07\x00\x00", 12) +
        std::string("\x01\x01\x00\x04\x00\x00\x00\x01\x00\x00\x00\x09", 12);
    EXPECT_EQ(image_format(tiff_be), ImageFormat::tiff);
    EXPECT_EQ(stated_size(tiff_be, ImageFormat::tiff)->width, 7u);
    EXPECT_EQ(stated_size(tiff_be, ImageFormat::tiff)->height, 9u);
}

// Formats OpenCV also reads are no format of ours, and neither are bytes that only start like
// one of ours under a looser test than OpenCV's.
TEST(ImageHeader, OtherFormatsAreUnknown) {
    std::vector<unsigned char> jp2;
    ASSERT_TRUE(cv::imencode(".jp2", pattern_image(1, 64, 64, 3), jp2));
    std::string dicom(128, 'P');
    dicom += "DICM";
    for (const std::string& bytes : {std::string(jp2.begin(), jp2.end()), encoded(".ras", 3), dicom,
                                     std::string("P7\nWIDTH 2\n"), std::string("P5x 2 2 255\n"),
                                     std::string("RIFF....WEBPVP8 ") + std::string(16, '\0'),
                                     std::string(), std::string("B"), std::string("\x89PNG", 4)})
        EXPECT_EQ(image_format(bytes), ImageFormat::unknown) << bytes.substr(0, 12);
    EXPECT_STREQ(format_name(ImageFormat::unknown), "no format Tandem reads");
}

// What damaged or made-up headers claim is read as claimed (decode_image refuses the large
// ones); a header cut short states nothing.
TEST(ImageHeader, ClaimsAreReadAsStated) {
    // The image fuzzer's BMP: 655368 x 1536, 3 GB of pixels.
    const std::string bmp(
        "BM\xc6\x00\xfb\xff\xff\xff\x00\x00\x36\xd6\x00\x00\x28\x00\x00\x00"
        "\x08\x00\x0a\x00\x00\x06\x00\x00\x01\x00\x18\x00",
        30);
    const auto claimed = stated_size(bmp, ImageFormat::bmp);
    ASSERT_TRUE(claimed.has_value());
    EXPECT_EQ(claimed->width, 655368u);
    EXPECT_EQ(claimed->height, 1536u);
    EXPECT_FALSE(stated_size(bmp.substr(0, 20), ImageFormat::bmp).has_value());

    const auto pnm =
        stated_size("P6\n# written by hand\n100000 # width\n 200000\n255\n", ImageFormat::pnm);
    ASSERT_TRUE(pnm.has_value());
    EXPECT_EQ(pnm->width, 100000u);
    EXPECT_EQ(pnm->height, 200000u);
    // OpenCV's reader skips any byte that is not a digit before a number: the fuzzer's PNM.
    const auto junk = stated_size(
        "P4 77755j10349\xbc\xff\xff\xff"
        "58",
        ImageFormat::pnm);
    ASSERT_TRUE(junk.has_value());
    EXPECT_EQ(junk->width, 77755u);
    EXPECT_EQ(junk->height, 10349u);
    // ... and the byte ending a number goes with it: a '#' there starts no comment.
    EXPECT_EQ(stated_size("P4 77750#10349\xff[", ImageFormat::pnm)->height, 10349u);
    EXPECT_EQ(stated_size("P2 4#3\n5 255", ImageFormat::pnm)->height, 3u);
    EXPECT_EQ(stated_size("P2 4 #3\n5 255", ImageFormat::pnm)->height, 5u);
    EXPECT_EQ(stated_size("P5 99999999999999999999999 1\n", ImageFormat::pnm)->width,
              std::uint64_t(1) << 40);
    EXPECT_FALSE(stated_size("P5\n12", ImageFormat::pnm).has_value());
    EXPECT_FALSE(stated_size("P5\n# only a comment", ImageFormat::pnm).has_value());

    // libtiff takes a tag's first entry and any integer type: a repeated width does not hide
    // the first one's claim, and an 8-bit height counts.
    const std::string repeated =
        std::string("II\x2A\x00\x08\x00\x00\x00\x03\x00", 10) +
        std::string("\x00\x01\x04\x00\x01\x00\x00\x00\x00\x00\x10\x00", 12) +
        std::string("\x00\x01\x03\x00\x01\x00\x00\x00\x07\x00\x00\x00", 12) +
        std::string("\x01\x01\x01\x00\x01\x00\x00\x00\x09\x00\x00\x00", 12);
    const auto first = stated_size(repeated, ImageFormat::tiff);
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->width, 0x100000u);
    EXPECT_EQ(first->height, 9u);
    std::string tiff = encoded(".tiff", 1);
    EXPECT_FALSE(stated_size(tiff.substr(0, 8), ImageFormat::tiff).has_value());
    put_le32(tiff, 4, 0xFFFFFFF0u);  // the directory past the end
    EXPECT_FALSE(stated_size(tiff, ImageFormat::tiff).has_value());

    // A lossless WebP's header: 14 bits each of width - 1 and height - 1, here 16384 x 16384.
    std::string webp("RIFF\x24\x00\x00\x00WEBPVP8L\x18\x00\x00\x00\x2f\xff\xff\xff\x0f", 25);
    webp.resize(44, '\0');
    EXPECT_EQ(image_format(webp), ImageFormat::webp);
    const auto big = stated_size(webp, ImageFormat::webp);
    ASSERT_TRUE(big.has_value());
    EXPECT_EQ(big->width, 16384u);
    EXPECT_EQ(big->height, 16384u);
}

}  // namespace tandem::test
