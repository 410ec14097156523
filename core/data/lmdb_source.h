// LmdbSource: an LMDB database of Tandem records (record.h, docs/data-format.md), as written by
// `tandem mkdb` and `tandem import-idx`.
//
// Opening walks the keys once with a cursor, reading each record's 28-byte header: the keys
// give random access in any order (a fresh permutation each epoch), the labels give classes()
// and let the loader check labels before it decodes anything. Records whose header is damaged
// are remembered and raise CorruptSampleError when read, so the loader skips them like any
// undecodable image.
#pragma once

#include <map>
#include <memory>

#include "data/data_source.h"
#include "data/lmdb_env.h"

namespace tandem {

class LmdbSource final : public DataSource {
public:
    // `classes` > 0 declares the class count (a label at or above it is a DataError naming the
    // key); 0 takes the number of class names, or the largest label + 1 without them.
    // DataError for a missing path, an empty database, or class names fewer than its labels.
    explicit LmdbSource(const std::string& path, std::int64_t classes = 0);

    std::int64_t size() const override { return static_cast<std::int64_t>(keys_.size()); }
    std::int64_t classes() const override { return classes_; }
    // From classes.txt beside data.mdb (mkdb writes it from a folder's sub-folders); none
    // without one.
    std::vector<std::string> class_names() const override { return class_names_; }
    // CorruptSampleError naming the key for a record whose header is damaged.
    std::int32_t label(std::int64_t index) const override;
    std::string key(std::int64_t index) const override;
    std::string description() const override;
    // Interaction when most of the records whose header reads are interaction records: a
    // database mixing the two is read as its majority, and the loader skips the others as it
    // skips damaged records, rather than skipping most of an epoch.
    SampleKind sample_kind() const override;
    std::unique_ptr<SourceReader> open_reader() const override;

    // Records whose header could not be read when the database was opened.
    std::int64_t damaged() const { return static_cast<std::int64_t>(damage_.size()); }

private:
    class Reader;
    static constexpr std::int32_t kDamaged = -1;

    std::shared_ptr<LmdbEnv> env_;
    std::vector<std::string> keys_;
    std::vector<std::int32_t> labels_;           // kDamaged for a damaged record
    std::map<std::size_t, std::string> damage_;  // index -> what is wrong, for the damaged ones
    std::int64_t classes_ = 0;
    std::int64_t interaction_records_ = 0;
    std::vector<std::string> class_names_;
};

}  // namespace tandem
