// Building and checking LMDB databases of Tandem records (issue 3: `tandem mkdb`,
// `tandem import-idx`, `tandem mkdb --check`).
//
// build_db reads a source with several threads, each decoding (and resizing, re-encoding) its
// share of a chunk of samples; the chunk is then written in order, so the database is the same
// whatever the thread count. An image that is already in the requested encoding and needs no
// change is stored as it is (no second JPEG loss). Corrupt images are skipped and reported.
#pragma once

#include <cstdint>
#include <functional>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "data/data_source.h"

namespace tandem {

struct DbBuildOptions {
    int resize = 0;    // shorter side to this many pixels; 0 keeps the size
    int channels = 0;  // 0: as stored; 1 or 3 converts
    Encoding encoding = Encoding::png;
    int quality = 95;      // JPEG quality
    bool shuffle = false;  // write in a permutation drawn from `seed`
    std::uint64_t seed = 1;
    int threads = 2;
    bool overwrite = false;  // replace an existing database at the path
    bool strict = false;     // a corrupt image stops the build
    // Called after each chunk with (samples done, total).
    std::function<void(std::int64_t, std::int64_t)> progress;
};

struct DbBuildResult {
    std::int64_t written = 0;
    std::vector<std::string> skipped;  // messages naming each corrupt image
};

DbBuildResult build_db(const DataSource& source, const std::string& path,
                       const DbBuildOptions& options);

// Decodes every record of the database at `path`, images or interaction records as the loader
// would (LmdbSource::sample_kind); returns one message per record that does not decode (empty
// when all do). `progress` as above.
std::vector<std::string> check_db(
    const std::string& path, int threads,
    const std::function<void(std::int64_t, std::int64_t)>& progress = {});

// Record bytes for one decoded image (BGR or grey, 8-bit) in `encoding`.
std::string encode_image_record(const cv::Mat& image, std::int32_t label, Encoding encoding,
                                int quality);

}  // namespace tandem
