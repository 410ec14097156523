#include <gtest/gtest.h>

#include "data/db_builder.h"
#include "data/image_decode.h"
#include "data/transform.h"
#include "data_fixtures.h"

namespace tandem::test {
namespace {

// A raw 3-channel sample (RGB bytes) of the pattern image.
RawSample raw_sample(int i, int h, int w, int c) {
    const cv::Mat m = pattern_image(i, h, w, c);
    const std::string record = encode_image_record(m, 0, Encoding::raw, 95);
    RawSample s;
    s.key = "k";  // (not "k" + ...: GCC 12 warns falsely, -Wrestrict)
    s.key += std::to_string(i);
    s.encoding = Encoding::raw;
    s.height = h;
    s.width = w;
    s.channels = c;
    s.bytes = record.substr(kRecordHeaderSize);
    return s;
}

TEST(Transform, CentreCropToRgbChwFloats) {
    TransformOptions o;
    o.crop_height = 2;
    o.crop_width = 3;
    const ImageTransform t(o);
    std::vector<float> out;
    const RawSample s = raw_sample(1, 4, 5, 3);
    EXPECT_EQ(t.apply(s, 0, Layout::contiguous, out), (Shape{3, 2, 3}));
    const cv::Mat m = pattern_image(1, 4, 5, 3);  // BGR
    // Centre: rows 1..2, columns 1..3; channel 0 of the output is R = BGR index 2.
    for (int k = 0; k < 3; ++k)
        for (int y = 0; y < 2; ++y)
            for (int x = 0; x < 3; ++x)
                EXPECT_FLOAT_EQ(out[(k * 2 + y) * 3 + x],
                                m.at<cv::Vec3b>(1 + y, 1 + x)[2 - k] / 255.f);
    std::vector<float> hwc;
    t.apply(s, 0, Layout::channels_last, hwc);
    for (int k = 0; k < 3; ++k)
        for (int p = 0; p < 6; ++p) EXPECT_EQ(hwc[p * 3 + k], out[k * 6 + p]);
}

TEST(Transform, FlipPadFillAndNormalise) {
    TransformOptions o;
    o.crop_height = 3;
    o.crop_width = 3;
    o.pad = 1;
    o.fill = 255;
    o.flip = true;
    o.random_crop = true;
    o.mean = {0.5f};
    o.std = {0.5f};
    const ImageTransform t(o);
    const RawSample s = raw_sample(2, 3, 3, 1);
    const cv::Mat m = pattern_image(2, 3, 3, 1);
    int flips = 0, padded = 0;
    for (std::uint64_t key = 0; key < 64; ++key) {
        std::vector<float> a, b;
        t.apply(s, key, Layout::contiguous, a);
        t.apply(s, key, Layout::contiguous, b);
        EXPECT_EQ(a, b) << "the same key gives the same image";
        // Find the shift and flip that explain the output.
        bool explained = false;
        for (int dy = -1; dy <= 1 && !explained; ++dy)
            for (int dx = -1; dx <= 1 && !explained; ++dx)
                for (int f = 0; f < 2 && !explained; ++f) {
                    bool ok = true;
                    for (int y = 0; y < 3; ++y)
                        for (int x = 0; x < 3; ++x) {
                            const int sy = y + dy, sx = (f ? 2 - x : x) + dx;
                            const float v = (sy < 0 || sy > 2 || sx < 0 || sx > 2)
                                                ? 255.f
                                                : float(m.at<unsigned char>(sy, sx));
                            ok = ok && std::abs(a[y * 3 + x] - (v / 255.f - 0.5f) / 0.5f) < 1e-6f;
                        }
                    if (ok) {
                        explained = true;
                        flips += f;
                        padded += (dy != 0 || dx != 0);
                    }
                }
        EXPECT_TRUE(explained) << "key " << key;
    }
    EXPECT_GT(flips, 10);
    EXPECT_GT(padded, 20);
}

TEST(Transform, ColourJitterStaysInRangeAndVaries) {
    TransformOptions o;
    o.brightness = 0.4f;
    o.contrast = 0.4f;
    o.saturation = 0.4f;
    const ImageTransform t(o);
    const RawSample s = raw_sample(3, 8, 8, 3);
    std::vector<float> plain, a, b;
    ImageTransform(TransformOptions{}).apply(s, 0, Layout::contiguous, plain);
    t.apply(s, 1, Layout::contiguous, a);
    t.apply(s, 2, Layout::contiguous, b);
    EXPECT_NE(a, plain);
    EXPECT_NE(a, b);
    for (float v : a) EXPECT_TRUE(v >= 0.f && v <= 1.f) << v;
}

TEST(Transform, ResizeShorterSideAndErrors) {
    TransformOptions o;
    o.resize = 8;
    std::vector<float> out;
    EXPECT_EQ(ImageTransform(o).apply(raw_sample(0, 4, 6, 3), 0, Layout::contiguous, out),
              (Shape{3, 8, 12}));
    o.resize = 0;
    o.crop_height = o.crop_width = 5;
    try {
        ImageTransform(o).apply(raw_sample(0, 4, 6, 3), 0, Layout::contiguous, out);
        FAIL();
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find("image 'k0' is 4x6, smaller than the 5x5 crop"),
                  std::string::npos)
            << e.what();
    }
    o.mean = {0.1f, 0.2f, 0.3f};  // three means for a grey image
    o.std = {1.f};
    o.crop_height = o.crop_width = 0;
    EXPECT_THROW(ImageTransform(o).apply(raw_sample(0, 4, 6, 1), 0, Layout::contiguous, out),
                 DataError);
    o.mean = {0.1f, 0.2f};
    EXPECT_THROW(ImageTransform{o}, ConfigError);
    TransformOptions bad;
    bad.pad = 2;
    EXPECT_THROW(ImageTransform{bad}, ConfigError);
    bad = {};
    bad.std = {0.f};
    EXPECT_THROW(ImageTransform{bad}, ConfigError);
    bad = {};
    bad.crop_height = 3;
    EXPECT_THROW(ImageTransform{bad}, ConfigError);
}

TEST(Transform, CorruptBytesAreCorruptSamples) {
    RawSample s;
    s.key = "broken.jpg";
    s.encoding = Encoding::jpeg;
    s.bytes = "\xFF\xD8\xFF garbage \xFF\xD9";
    std::vector<float> out;
    EXPECT_THROW(ImageTransform(TransformOptions{}).apply(s, 0, Layout::contiguous, out),
                 CorruptSampleError);
    std::vector<unsigned char> jpeg;
    cv::imencode(".jpg", pattern_image(0, 32, 32, 3), jpeg);
    s.bytes.assign(jpeg.begin(), jpeg.begin() + jpeg.size() / 2);
    try {
        ImageTransform(TransformOptions{}).apply(s, 0, Layout::contiguous, out);
        FAIL();
    } catch (const CorruptSampleError& e) {
        EXPECT_NE(std::string(e.what()).find("'broken.jpg'"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos);
    }
}

// A header claiming a huge image is refused before the decoder allocates what it states (the
// fuzzer's 2 GB JPEG), and a header disagreeing with the record's size before decoding.
TEST(Transform, ImageHeadersAreCheckedBeforeDecoding) {
    RawSample s;
    s.key = "huge";
    s.encoding = Encoding::jpeg;
    // SOI, a start-of-frame claiming 65535 x 65535, EOI.
    // Appended piece by piece: GCC 12 at -O1 (the TSan build) warns falsely of a bounds overrun
    // in the chain of operator+ on temporaries.
    s.bytes.assign("\xFF\xD8\xFF\xC0\x00\x11\x08\xFF\xFF\xFF\xFF\x03", 12);
    s.bytes.append(16, '\0');
    s.bytes.append("\xFF\xD9");
    try {
        decode_image(s, 0);
        FAIL() << "expected a CorruptSampleError";
    } catch (const CorruptSampleError& e) {
        EXPECT_NE(std::string(e.what()).find("claims 65535x65535 pixels"), std::string::npos)
            << e.what();
    }
    s.bytes.insert(2,
                   "stray bytes libjpeg skips");  // before the frame, as the fuzzer's second find
    EXPECT_THROW(decode_image(s, 0), CorruptSampleError);
    s.bytes.insert(2,
                   std::string("\xFF\x00", 2));  // a stuffed FF among them: no marker, skipped too
    try {
        decode_image(s, 0);
        FAIL() << "expected a CorruptSampleError";
    } catch (
        const CorruptSampleError& e) {  // found by the header check, before the decoder allocates
        EXPECT_NE(std::string(e.what()).find("claims 65535x65535 pixels"), std::string::npos)
            << e.what();
    }
    std::vector<unsigned char> png;
    cv::imencode(".png", pattern_image(0, 8, 6, 3), png);
    s.encoding = Encoding::png;
    s.bytes.assign(png.begin(), png.end());
    s.height = 8;
    s.width = 6;
    EXPECT_EQ(decode_image(s, 3).rows, 8);
    for (std::size_t i : {16, 20}) s.bytes[i] = '\x7f';  // IHDR's width and height: 2^31 - ...
    EXPECT_THROW(decode_image(s, 3), CorruptSampleError);
    s.bytes.assign(png.begin(), png.end());
    s.height = 9;
    try {
        decode_image(s, 3);
        FAIL() << "expected a CorruptSampleError";
    } catch (const CorruptSampleError& e) {
        EXPECT_NE(std::string(e.what()).find("its header states 8x6, the record 9x6"),
                  std::string::npos)
            << e.what();
    }
}

// Only the formats an image folder takes reach OpenCV (data/image_format.h): each of them
// decodes; a format OpenCV also reads (JPEG 2000, Sun raster) is refused by name, and so are the
// image fuzzer's bytes, "DICM" at byte 128 after no known signature, which OpenCV gave to GDCM's
// DICOM reader, whose failed assertion ended the process. A record is in the format it states,
// and every format's header is checked before decoding (data/image_header.h).
TEST(Transform, OnlyTheFormatsWeTakeReachTheDecoder) {
    const auto sample = [](const std::string& key, const std::vector<unsigned char>& bytes) {
        RawSample s;
        s.key = key;
        s.bytes.assign(bytes.begin(), bytes.end());
        s.encoding = sniff_encoding(s.bytes);
        return s;
    };
    for (const char* ext : {".jpg", ".png", ".bmp", ".ppm", ".pgm", ".pbm", ".tiff", ".webp"}) {
        const bool grey = std::string(ext) == ".pgm" || std::string(ext) == ".pbm";
        std::vector<unsigned char> bytes;
        ASSERT_TRUE(cv::imencode(ext, pattern_image(1, 9, 7, grey ? 1 : 3), bytes)) << ext;
        const cv::Mat image = decode_image(sample(ext, bytes), 0);
        EXPECT_EQ(image.size(), cv::Size(7, 9)) << ext;
        EXPECT_EQ(image.channels(), grey ? 1 : 3) << ext;
    }
    const auto refusal = [](const RawSample& s) {
        try {
            decode_image(s, 3);
        } catch (const CorruptSampleError& e) {
            return std::string(e.what());
        }
        return std::string("(decoded)");
    };
    const auto refused = [&](const std::string& key, const std::vector<unsigned char>& bytes) {
        return refusal(sample(key, bytes));
    };
    for (const char* ext : {".jp2", ".ras"}) {
        std::vector<unsigned char> bytes;
        // 64 x 64: OpenJPEG's default six resolution levels need 32 pixels a side.
        ASSERT_TRUE(cv::imencode(ext, pattern_image(1, 64, 64, 3), bytes)) << ext;
        EXPECT_NE(refused(ext, bytes).find("not an image in a format Tandem reads (JPEG, PNG"),
                  std::string::npos)
            << ext << ": " << refused(ext, bytes);
    }
    // A record is in the format it states.
    std::vector<unsigned char> bmp;
    ASSERT_TRUE(cv::imencode(".bmp", pattern_image(1, 9, 7, 3), bmp));
    RawSample record = sample("00000003", bmp);
    record.encoding = Encoding::jpeg;
    EXPECT_NE(refusal(record).find("the record states jpeg, its bytes are BMP"), std::string::npos)
        << refusal(record);
    // Every format's header is checked before decoding: the image fuzzer's BMP claimed 3 GB.
    const std::string huge(
        "BM\xc6\x00\xfb\xff\xff\xff\x00\x00\x36\xd6\x00\x00\x28\x00\x00\x00"
        "\x08\x00\x0a\x00\x00\x06\x00\x00\x01\x00\x18\x00",
        30);
    EXPECT_NE(refused("huge.bmp", std::vector<unsigned char>(huge.begin(), huge.end()))
                  .find("its header claims 1536x655368 pixels"),
              std::string::npos);
    // A header that states no size reaches no decoder: what it would allocate is unknown.
    bmp.resize(20);
    EXPECT_NE(refused("cut.bmp", bmp).find("its BMP header states no size"), std::string::npos)
        << refused("cut.bmp", bmp);
    // A 128-byte preamble that starts as no format, then DICOM's magic and a group-2 tag.
    std::vector<unsigned char> dicom(128, 0x50);
    dicom[0] = 0xFF;
    for (unsigned char c : {'D', 'I', 'C', 'M', '\x02', '\x00'}) dicom.push_back(c);
    const std::string why = refused("scan.dcm", dicom);
    EXPECT_NE(why.find("cannot decode image 'scan.dcm'"), std::string::npos) << why;
    EXPECT_NE(why.find("not an image in a format Tandem reads"), std::string::npos) << why;
}

}  // namespace
}  // namespace tandem::test
