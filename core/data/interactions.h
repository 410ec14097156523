// Users' interaction data as samples for a net (docs/data-format.md, "Interaction data"): each
// example one float vector of L + F values, the user's last L item ids then F feature values,
// and a class label. The text format is parsed by interaction_text.h; this file fixes the
// length and width, and writes and reads the LMDB form (`tandem import-interactions`, records
// of encoding `interaction`, record.h).
//
// Items: id i is stored as i + 1, so 0 pads. A sequence longer than L keeps its last (most
// recent) L items; a shorter one is padded on the left, so the newest item is always at the
// end, where an LSTM's last state reads it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/data_source.h"
#include "data/interaction_text.h"

namespace tandem {

inline constexpr float kPaddingItem = 0.0f;

// 0: from the data (the longest sequence; the largest feature index + 1).
struct InteractionShape {
    std::int64_t length = 0;
    std::int64_t features = 0;
};

struct InteractionSet {
    std::int64_t length = 0, features = 0;
    // The rows an nn.Embedding over the stored ids needs: the largest id + 2 (padding is 0).
    std::int64_t items = 1;
    std::int64_t classes = 0;          // the largest label + 1
    std::vector<float> samples;        // size() x width(), row-major
    std::vector<std::int32_t> labels;  // one per example
    std::vector<std::string> users;    // one per example
    std::int64_t size() const { return static_cast<std::int64_t>(labels.size()); }
    std::int64_t width() const { return length + features; }
};

// The most values one sample may hold (L + F): a net input of 16M values is no user's data but
// a damaged index, refused by name before anything that large is allocated.
inline constexpr std::int64_t kMaxInteractionWidth = std::int64_t(1) << 24;
// The most values a whole set may hold when laid out (examples x width, 1 GiB of floats): a
// few dozen damaged lines each naming a feature index near the width limit would otherwise ask
// for gigabytes (the fuzzer found 20 such lines taking 2 GB).
inline constexpr std::int64_t kMaxInteractionValues = std::int64_t(1) << 28;

// ConfigError for a length or width out of range (negative, or past the limits above).
void check_interaction_shape(const InteractionShape& shape);

// The examples laid out in `shape`. DataError naming the file, line and field for a feature
// index at or past a given `features`, and naming the file when its samples would be wider
// than kMaxInteractionWidth or more than this machine can hold; ConfigError for a negative
// length or width, or both coming out 0.
InteractionSet layout_interactions(const std::vector<InteractionLine>& lines,
                                   const std::string& name, const InteractionShape& shape);

// The one reading of an interaction record's payload (record.h), shared by read_interactions
// and the streaming Loader so both give the same sample: the record's height + width float32s
// into out[0 .. height + width), returning the largest stored id (0 when it has no item).
// CorruptSampleError naming the key (and database) when the record is not an interaction, its
// payload is not (height + width) floats, a stored id is not a whole number in [0, 2^24 - 1]
// or a feature is not finite: a flipped bit in a payload would otherwise reach the net as a
// NaN or a row past the embedding.
std::int64_t decode_interaction(const RawSample& sample, float* out);

// A folder holding data.mdb: an LMDB database, else a text file.
bool is_lmdb_folder(const std::string& path);

// The examples of a text file or of a database written by write_interaction_db. For a
// database, a non-zero `shape` must be the one it was written with (ConfigError saying so);
// DataError naming the key for a record that is not an interaction or of another shape.
InteractionSet read_interactions(const std::string& path, const InteractionShape& shape);

// What read_interactions says of a data set, without the data.
struct InteractionInfo {
    std::int64_t length = 0, features = 0, items = 1, classes = 0, size = 0;
};

// read_interactions' shape, item rows, classes and example count, with its errors, for a
// recipe that streams a database (T.data.Loader) and sizes its net first: for a database one
// pass over its records that keeps none of them (a text file is read whole, as it must be to
// lay it out).
InteractionInfo interaction_info(const std::string& path, const InteractionShape& shape);

// Writes `set` as a new database at `path` (keys: the record number, a space, the user id). It
// is built aside and moved into place when complete (LmdbWriter), so a failure leaves nothing;
// ConfigError when `path` exists and not `overwrite`.
void write_interaction_db(const InteractionSet& set, const std::string& path, bool overwrite);

}  // namespace tandem
