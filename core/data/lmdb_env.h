// LmdbEnv: an LMDB environment (one database file set) with RAII handles, shared by the
// source (read-only, any number of reader threads) and the writer of mkdb (issue 3).
//
// LMDB reports failures as return codes; every call goes through check(), which throws a
// BackendError naming the path and the operation, or DataError for "no such database".
#pragma once

#include <lmdb.h>

#include <memory>
#include <string>

namespace tandem {

class LmdbEnv {
public:
    // Opens the database at `path`: a directory holding data.mdb (what Caffe and mkdb write)
    // or the data file itself. Read-only opens need it to exist (DataError naming the path);
    // a writable open creates the directory.
    LmdbEnv(const std::string& path, bool writable);
    ~LmdbEnv();
    LmdbEnv(const LmdbEnv&) = delete;
    LmdbEnv& operator=(const LmdbEnv&) = delete;

    MDB_env* get() const { return env_; }
    MDB_dbi dbi() const { return dbi_; }
    const std::string& path() const { return path_; }

    // Grows the memory map (writers, on MDB_MAP_FULL).
    void set_map_size(std::size_t bytes);
    std::size_t map_size() const;

    // Throws BackendError "<path>: <what>: <mdb_strerror>" when rc is not MDB_SUCCESS.
    void check(int rc, const char* what) const;

private:
    // DataError naming the file when it is shorter than the pages its meta page says it has,
    // and (read-only opens) naming what is wrong when the main database's tree does not hold
    // together (data/lmdb_check.h), before any cursor follows it.
    void check_pages(const std::string& file, bool writable);
    // Closes the environment and throws DataError "LMDB database <path> is damaged: <why>".
    [[noreturn]] void refuse_damaged(const std::string& why);

    std::string path_;
    MDB_env* env_ = nullptr;
    MDB_dbi dbi_ = 0;
};

// A transaction that aborts unless committed.
class LmdbTxn {
public:
    LmdbTxn(const LmdbEnv& env, bool read_only);
    ~LmdbTxn();
    LmdbTxn(const LmdbTxn&) = delete;
    LmdbTxn& operator=(const LmdbTxn&) = delete;
    MDB_txn* get() const { return txn_; }
    void commit();

private:
    const LmdbEnv& env_;
    MDB_txn* txn_ = nullptr;
};

}  // namespace tandem
