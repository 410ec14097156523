// PNG samples decoded by libpng directly (issue 19), with error and warning handlers of our own.
// OpenCV's PNG reader creates libpng's reader with libpng's default handlers, which print every
// complaint on stderr ("libpng error: IDAT: incorrect header check", "libpng warning: iCCP: too
// short") before OpenCV answers with an empty image. Here an error becomes the reason we report
// and a warning is dropped, so libpng prints nothing, whatever the bytes.
//
// The read is OpenCV 4.6's (the same libpng transforms, in the same order), so the pixels are
// the ones cv::imdecode gave. Not libpng's simplified API (png_image_*), which also keeps its
// messages to itself, because it manages colour where OpenCV does not: it applies a gAMA
// chunk's gamma, takes 16-bit samples as linear light, rounds 16 bits to 8 where OpenCV drops
// the low byte, composites alpha onto a background, and makes grey from colour with other
// weights. Each changes pixels, some by over half the range: a dataset would train on other
// values than it did, and than other tools read.
#pragma once

#include <opencv2/core.hpp>
#include <string>

namespace tandem {

// The pixels cv::imdecode gives for `bytes`: 8-bit (16-bit samples lose their low byte), alpha
// dropped, BGR order, an eXIf chunk's orientation applied. `channels`: 1 grey, 3 colour, 0 as
// stored (a grey image stays grey; colour, palette and grey with alpha come out in colour, as
// under OpenCV's IMREAD_ANYCOLOR). An empty image when the bytes do not decode, `problem` then
// saying why, for a user ("its pixel data ends early"). A warning (a malformed ancillary chunk,
// which libpng skips; data after the last row) is no problem: the image reads as OpenCV read it.
cv::Mat decode_png(const std::string& bytes, int channels, std::string& problem);

}  // namespace tandem
