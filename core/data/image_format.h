// Which format an encoded image is in, by its first bytes, before any decoder sees it.
// PNGs go to libpng under our own handlers (data/png_decode.h); the other formats we take go to
// cv::imdecode, which gives the bytes to the first of its decoders whose signature test they
// pass, in the order OpenCV 4.6 registers them: BMP, HDR, JPEG, WebP, Sun raster, PNM, PAM, PFM,
// TIFF, PNG, then DICOM, JPEG 2000, OpenEXR and GDAL. Debian builds it with every one of them,
// and GDCM's DICOM reader ends the process on a failed assertion over a damaged file (the image
// fuzzer's find: bytes that start as no known format and hold "DICM" at byte 128). So only the
// formats an image folder takes (docs/lua-api.md, `T.data.folder`) reach OpenCV, each
// recognised by a test at least as strict as OpenCV's own: then one of those decoders, or one
// registered before it, takes the bytes, never one after PNG.
#pragma once

#include <string>

namespace tandem {

enum class ImageFormat { unknown, png, jpeg, bmp, pnm, tiff, webp };

// The format `bytes` begin as; unknown for any other (such bytes must reach no decoder).
ImageFormat image_format(const std::string& bytes);

// "PNG", "JPEG", "BMP", "PNM", "TIFF", "WebP"; "no format Tandem reads" for unknown.
const char* format_name(ImageFormat format);

// The formats Tandem decodes, for messages ("JPEG, PNG, BMP, PNM (ppm, pgm, pbm), TIFF or WebP").
extern const char* const kImageFormats;

}  // namespace tandem
