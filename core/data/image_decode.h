// Decoding a sample's bytes into an 8-bit OpenCV image (issue 3): raw records are wrapped, PNGs
// go through libpng with our own error handlers (data/png_decode.h), JPEG and the other formats
// we take (data/image_format.h) through cv::imdecode. Colour images come out in OpenCV's BGR
// order; the transform writes tensors in RGB.
#pragma once

#include <opencv2/core.hpp>

#include "data/data_source.h"

namespace tandem {

// `channels`: 1 or 3 converts (grey to colour or back); 0 keeps what is stored (an encoded
// file: grey or colour as it is, alpha dropped). CorruptSampleError naming the key when the
// bytes are in no format we take or do not decode, a JPEG has no end-of-image marker
// (truncated), or the decoded shape differs from the shape the record states. A PNG's chunks
// are checked first (data/png_check.h) for a message that names the damaged chunk and byte;
// what passes the check but not libpng (damage under valid CRCs) is libpng's reason in our
// words, and libpng prints nothing on stderr either way. `full` adds the check of its compressed
// pixel stream, for integrity checks that can afford it (as slow as half a decode): it names the
// row a bad filter byte is in.
enum class ImageCheck { fast, full };
cv::Mat decode_image(const RawSample& sample, int channels, ImageCheck check = ImageCheck::fast);

// `image` scaled so its shorter side is `side` (the aspect ratio kept); itself when it already
// is, or when side <= 0. Area averaging when shrinking (no aliasing), bilinear when growing.
cv::Mat resize_shorter(const cv::Mat& image, int side);

}  // namespace tandem
