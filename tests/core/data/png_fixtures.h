// PNGs made and damaged byte by byte, for the PNG check and decoder tests (issue 19): chunks
// with their CRCs, a small grey image from given scanlines, CRCs made valid again after a
// change, as a made (not accidental) damage has them.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/image_decode.h"

namespace tandem::test {

inline std::string encode_png(const cv::Mat& image) {
    std::vector<unsigned char> png;
    cv::imencode(".png", image, png);
    return {png.begin(), png.end()};
}

inline void put_u32(std::string& b, std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + std::size_t(i)] = static_cast<char>(v >> (24 - 8 * i));
}

// Recomputes every chunk's CRC, as a made (not accidental) damage would.
inline void fix_crcs(std::string& b) {
    for (std::size_t at = 8; at + 12 <= b.size();) {
        const std::uint32_t length = std::uint32_t(static_cast<unsigned char>(b[at])) << 24 |
                                     std::uint32_t(static_cast<unsigned char>(b[at + 1])) << 16 |
                                     std::uint32_t(static_cast<unsigned char>(b[at + 2])) << 8 |
                                     static_cast<unsigned char>(b[at + 3]);
        if (length > b.size() - at - 12) return;
        put_u32(b, at + 8 + length,
                crc32(0, reinterpret_cast<const Bytef*>(b.data() + at + 4), length + 4));
        at += 12 + length;
    }
}

// One chunk: length, type, data, CRC.
inline std::string png_chunk(const std::string& type, const std::string& data) {
    std::string c(4, '\0');
    put_u32(c, 0, std::uint32_t(data.size()));
    c += type + data + std::string(4, '\0');
    put_u32(c, c.size() - 4,
            crc32(0, reinterpret_cast<const Bytef*>(c.data() + 4), uInt(data.size() + 4)));
    return c;
}

inline std::string zlib_compress(const std::string& data) {
    uLongf size = compressBound(uLong(data.size()));
    std::string z(size, '\0');
    compress(reinterpret_cast<Bytef*>(z.data()), &size, reinterpret_cast<const Bytef*>(data.data()),
             uLong(data.size()));
    z.resize(size);
    return z;
}

// A 2x3 grey 8-bit PNG whose scanlines (filter byte + 3 pixels each) are `rows`; its IDAT data
// starts at byte 41.
inline std::string grey_png(const std::string& rows) {
    std::string ihdr(13, '\0');
    put_u32(ihdr, 0, 3);
    put_u32(ihdr, 4, 2);
    ihdr[8] = 8;
    return std::string("\x89PNG\r\n\x1a\n", 8) + png_chunk("IHDR", ihdr) +
           png_chunk("IDAT", zlib_compress(rows)) + png_chunk("IEND", "");
}

// `png` with `chunk` inserted right after its IHDR (byte 33), where ancillary chunks go.
inline std::string with_chunk(std::string png, const std::string& chunk) {
    png.insert(33, chunk);
    return png;
}

// What decoding `bytes` as the PNG file 'cat.png' in 3 channels gives: "(decoded)" or the
// CorruptSampleError's message; fails the test if anything was printed on stderr.
inline std::string decode_error(const std::string& bytes, ImageCheck check = ImageCheck::fast) {
    RawSample s;
    s.key = "cat.png";
    s.encoding = Encoding::png;
    s.bytes = bytes;
    testing::internal::CaptureStderr();
    std::string error = "(decoded)";
    try {
        (void)decode_image(s, 3, check);
    } catch (const CorruptSampleError& e) {
        error = e.what();
    }
    const std::string printed = testing::internal::GetCapturedStderr();
    EXPECT_EQ(printed, "") << "the decoder printed on stderr";
    return error;
}

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

}  // namespace tandem::test
