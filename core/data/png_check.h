// A PNG's structure checked before libpng reads it (issue 19), for messages that say where a
// file is damaged ("chunk 'IDAT' at byte 41 fails its CRC check", where libpng says "IDAT: CRC
// error"). It once also kept libpng quiet, whose default handlers print every complaint on
// stderr; libpng now reads PNG samples with our own handlers (data/png_decode.h), which is what
// guarantees that, whatever passes this check.
#pragma once

#include <string>

namespace tandem {

// `chunks`: the signature; chunks whose lengths fit, whose types are four ASCII letters and
// whose CRC-32 match; IHDR first, with a valid size, bit depth, colour type and methods; no
// unknown critical chunk; PLTE where a palette image needs one, none in a grey one; consecutive
// IDATs; no other chunk over libpng's 8 MB; IEND. An ancillary chunk that is malformed (a gAMA
// of 3 bytes, a tRNS after the image data) passes: libpng skips it without a word under our
// handlers (data/png_decode.h) and the image decodes, as it did through OpenCV.
// Costs a CRC pass (microseconds), and finds any accidental damage: a flipped bit, a cut file.
// `pixels`: also inflates the IDAT stream and checks it holds exactly the rows IHDR states, each
// with a filter type 0-4. Damage under valid CRCs is made, not met (the fuzzer makes it), and
// this pass costs as much as half a decode, so only integrity checks ask for it.
enum class PngCheck { chunks, pixels };

// Empty when `bytes` passes `check`, otherwise what is wrong, for a user ("chunk 'IDAT' at
// byte 41 fails its CRC check"). Bytes after IEND are ignored, as libpng ignores them.
std::string png_problem(const std::string& bytes, PngCheck check);

}  // namespace tandem
