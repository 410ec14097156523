// Small image sets for the data tests: LMDB databases of records with known pixels, image
// folders of PNGs, corrupt records on demand.
#pragma once

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "data/db_builder.h"
#include "data/lmdb_writer.h"
#include "data/record.h"

namespace tandem::test {

// Image `i` of a set: h x w x c, BGR (OpenCV order), pixel values a function of (i, y, x, k).
inline cv::Mat pattern_image(int i, int h, int w, int c) {
    cv::Mat m(h, w, CV_8UC(c));
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int k = 0; k < c; ++k)
                m.ptr<unsigned char>(y)[x * c + k] =
                    static_cast<unsigned char>((i * 37 + y * 11 + x * 3 + k * 50) % 256);
    return m;
}

// An LMDB database of `n` pattern images with labels i % classes, keys 00000000...
inline void write_pattern_db(const std::string& path, int n, int classes, int h, int w, int c,
                             Encoding encoding = Encoding::raw) {
    LmdbWriter writer(path, true);
    for (int i = 0; i < n; ++i)
        writer.put(record_key(i),
                   encode_image_record(pattern_image(i, h, w, c), i % classes, encoding, 95));
    writer.finish();
}

// Writes records as given (possibly damaged) under keys 00000000...
inline void write_records(const std::string& path, const std::vector<std::string>& records) {
    LmdbWriter writer(path, true);
    for (std::size_t i = 0; i < records.size(); ++i)
        writer.put(record_key(std::int64_t(i)), records[i]);
    writer.finish();
}

}  // namespace tandem::test
