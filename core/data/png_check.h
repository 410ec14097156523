// A PNG's structure checked before libpng reads it (issue 19): libpng prints its complaint
// ("libpng error: IDAT: CRC error") to stderr before OpenCV reports an empty image, so a user
// saw a line that is not ours above every damaged file. What libpng would refuse or warn
// about is found here first and said in our words; the sample is then corrupt as any other.
#pragma once

#include <string>

namespace tandem {

// `chunks`: the signature; chunks whose lengths fit, whose types are four ASCII letters and
// whose CRC-32 match; IHDR first, with a valid size, bit depth, colour type and methods; no
// unknown critical chunk; PLTE where a palette image needs one, none in a grey one; consecutive
// IDATs; the ancillary chunks libpng warns about (tRNS, gAMA, sRGB, ...) well formed; IEND.
// Costs a CRC pass (microseconds), and finds any accidental damage: a flipped bit, a cut file.
// `pixels`: also inflates the IDAT stream and checks it holds exactly the rows IHDR states, each
// with a filter type 0-4. Damage under valid CRCs is made, not met (the fuzzer makes it), and
// this pass costs as much as half a decode, so only integrity checks ask for it.
enum class PngCheck { chunks, pixels };

// Empty when `bytes` passes `check`, otherwise what is wrong, for a user ("chunk 'IDAT' at
// byte 41 fails its CRC check"). Bytes after IEND are ignored, as libpng ignores them.
std::string png_problem(const std::string& bytes, PngCheck check);

}  // namespace tandem
