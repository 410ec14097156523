// A damaged PNG is answered by our check before libpng reads it (issue 19): libpng printed
// "libpng error: [20]rea: invalid chunk type" or "IDAT: CRC error" on stderr above our message.
#include <gtest/gtest.h>

#include "base/error.h"
#include "data/image_decode.h"
#include "data/png_check.h"
#include "data_fixtures.h"
#include "png_fixtures.h"

namespace tandem::test {
namespace {

TEST(PngCheck, DamageIsNamedBeforeTheDecoderSeesIt) {
    const std::string good = encode_png(pattern_image(1, 9, 7, 3));
    EXPECT_EQ(png_problem(good, PngCheck::pixels), "");
    EXPECT_EQ(decode_error(good, ImageCheck::full), "(decoded)");

    // The loader's test file: a signature, then no chunk (libpng: "[20]rea: invalid chunk type").
    const std::string e1 = decode_error("\x89PNG\r\n\x1a\n not really a PNG file");
    EXPECT_HAS(
        e1, "cannot decode image 'cat.png' (png, 30 bytes): the chunk at byte 8 has no valid type");
    EXPECT_HAS(decode_error("\x89PNG\r\n\x1a\n not really"),
               "truncated: the chunk at byte 8 is cut short");
    std::string flipped = good;
    flipped[good.size() - 20] ^= 0x10;  // inside the (last) IDAT
    EXPECT_HAS(decode_error(flipped), "chunk 'IDAT' at byte");
    EXPECT_HAS(decode_error(flipped), "fails its CRC check");
    EXPECT_HAS(decode_error(good.substr(0, good.size() - 12)),
               "truncated: it ends without an IEND chunk");
    EXPECT_HAS(decode_error(good.substr(0, 50)), "truncated: chunk 'IDAT' at byte 33 states");
    EXPECT_HAS(decode_error(std::string("\x89PNG\r\n\x1a\n", 8) + png_chunk("IDAT", "x")),
               "its first chunk is 'IDAT'");
    std::string depth = good;
    depth[24] = 3;  // bit depth 3 for RGB
    fix_crcs(depth);
    EXPECT_HAS(decode_error(depth), "IHDR states bit depth 3 with colour type 2");
    std::string critical = good;
    critical.insert(33, png_chunk("ABCD", "x"));
    EXPECT_HAS(decode_error(critical),
               "chunk 'ABCD' at byte 33 is a critical chunk PNG readers do not know");
    // A malformed ancillary chunk is libpng's to skip: the image decodes.
    std::string gamma = good;
    gamma.insert(33, png_chunk("gAMA", std::string(3, '\0')));
    EXPECT_EQ(png_problem(gamma, PngCheck::chunks), "");
    EXPECT_EQ(decode_error(gamma), "(decoded)");
    EXPECT_HAS(decode_error("not a png at all"), "not a PNG (no PNG signature)");
}

TEST(PngCheck, TheFullCheckInflatesThePixelStream) {
    const std::string rows = std::string("\0\1\2\3\0\4\5\6", 8);
    EXPECT_EQ(decode_error(grey_png(rows), ImageCheck::full), "(decoded)");
    std::string filter = rows;
    filter[4] = 7;
    EXPECT_EQ(png_problem(grey_png(filter), PngCheck::chunks), "") << "valid chunks";
    EXPECT_HAS(decode_error(grey_png(filter), ImageCheck::full),
               "row 2 has filter type 7 (PNG has 0 to 4)");
    EXPECT_HAS(decode_error(grey_png(rows.substr(0, 6)), ImageCheck::full),
               "its pixel data ends early (6 of the 8 bytes its IHDR states)");
    EXPECT_HAS(decode_error(grey_png(rows + std::string("\0\7\7\7", 4)), ImageCheck::full),
               "it holds more pixel data than the 2x3 its IHDR states");
    std::string stream = grey_png(rows);
    stream[41 + 3] ^= 0x55;  // inside the deflate data of IDAT (data from byte 41), CRC made valid
    fix_crcs(stream);
    EXPECT_HAS(decode_error(stream, ImageCheck::full),
               "its compressed pixel data is damaged (zlib: ");
}

// Every single flipped bit of a PNG, with its CRC left (accidental damage) or made valid (the
// fuzzer's kind, under the full check): decoded or a CorruptSampleError, and nothing on stderr.
TEST(PngCheck, NoFlippedBitReachesLibpng) {
    for (const std::string& good :
         {encode_png(pattern_image(2, 5, 6, 3)), encode_png(pattern_image(3, 4, 9, 1))}) {
        for (std::size_t at = 8; at < good.size(); ++at) {
            std::string bad = good;
            bad[at] ^= static_cast<char>(1 << (at % 8));
            EXPECT_NE(decode_error(bad), "(decoded)")
                << "byte " << at << ": the CRC check lets it through";
            fix_crcs(bad);
            decode_error(bad, ImageCheck::full);
        }
    }
}

}  // namespace
}  // namespace tandem::test
