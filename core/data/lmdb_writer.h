// LmdbWriter: writes records into a new LMDB database (mkdb, import-idx; issue 3).
//
// Puts are gathered and committed in batches of `commit_every`. The memory map starts small and
// doubles whenever LMDB reports it full: the batch in hand is kept until its commit succeeds,
// so it is simply written again into the larger map.
//
// The database is built beside its place, in "<path>.partial", and moved there by finish():
// a run that fails or is killed leaves no half-written database at `path` (a rerun just works),
// and --overwrite replaces the old one only once the new one is complete.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/lmdb_env.h"

namespace tandem {

class LmdbWriter {
public:
    // ConfigError when `path` already exists (unless `overwrite`: finish() replaces it).
    LmdbWriter(const std::string& path, bool overwrite, std::size_t commit_every = 1000);
    ~LmdbWriter();  // without finish(), removes what was written: `path` stays as it was
    LmdbWriter(const LmdbWriter&) = delete;
    LmdbWriter& operator=(const LmdbWriter&) = delete;

    // ConfigError for a key already put.
    void put(std::string key, std::string value);
    // The class names, by label, written beside data.mdb as classes.txt by finish() (none: no
    // file). ConfigError for a name holding a line break.
    void set_class_names(std::vector<std::string> names);
    // Commits what is pending and moves the database to `path`; it is complete after this.
    void finish();
    std::int64_t written() const { return written_; }

private:
    void commit_pending();
    // Writes pending_ in one transaction; false when the map is full (nothing written).
    bool try_commit();

    std::string path_, partial_;
    std::vector<std::string> class_names_;
    bool overwrite_;
    std::unique_ptr<LmdbEnv> env_;
    std::size_t commit_every_;
    std::vector<std::pair<std::string, std::string>> pending_;
    std::int64_t written_ = 0;
};

// The class names of a database, one a line in label order, beside its data.mdb.
inline constexpr const char* kClassNamesFile = "classes.txt";

// Keys mkdb writes: the record number, zero-padded to 8 digits so LMDB's byte order is the
// numeric order ("00000042").
std::string record_key(std::int64_t index);

}  // namespace tandem
