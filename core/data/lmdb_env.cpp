#include "data/lmdb_env.h"

#include <cerrno>
#include <filesystem>

#include "base/error.h"
#include "data/lmdb_check.h"

namespace tandem {
namespace {

// What an LMDB status means to someone who has never read lmdb.h, then LMDB's own words for
// whoever has (issue 19: "MDB_CORRUPTED: Located page was wrong type" alone says little).
std::string plain_words(int rc) {
    std::string plain;
    switch (rc) {
        case MDB_INVALID: plain = "it is not an LMDB database"; break;
        case MDB_VERSION_MISMATCH: plain = "it was written by another version of LMDB"; break;
        case MDB_CORRUPTED:
        case MDB_PAGE_NOTFOUND: plain = "the database is damaged"; break;
        case MDB_MAP_FULL: plain = "the database has no room left (its map size)"; break;
        case MDB_MAP_RESIZED:
            plain =
                "its pages run past the size it stated when opened (damaged, or written to "
                "while being read)";
            break;
        case ENOSPC: plain = "the disk is full"; break;
        case EACCES:
        case EPERM: plain = "permission denied"; break;
        case ENOENT: plain = "no such file or directory"; break;
        default: return mdb_strerror(rc);
    }
    return plain + " (LMDB: " + mdb_strerror(rc) + ")";
}

}  // namespace

LmdbEnv::LmdbEnv(const std::string& path, bool writable) : path_(path) {
    namespace fs = std::filesystem;
    std::error_code error;
    const bool exists = fs::exists(path, error);
    if (!writable)
        TANDEM_CHECK_AS(DataError, exists) << "no LMDB database at " << path << ": no such file";
    if (writable && !exists) fs::create_directories(path);
    const bool directory = fs::is_directory(path, error);
    if (!writable && directory)
        TANDEM_CHECK_AS(DataError, fs::exists(fs::path(path) / "data.mdb", error))
            << "no LMDB database at " << path << ": the directory has no data.mdb";
    const std::string file = directory ? (fs::path(path) / "data.mdb").string() : path;
    if (!writable)
        if (const std::string why = lmdb_meta_problem(file); !why.empty()) refuse_damaged(why);
    check(mdb_env_create(&env_), "mdb_env_create");
    // NOTLS: a read transaction is not tied to its thread's slot, so a reader may be opened on
    // one thread and used on another. NOLOCK for readers: mkdb never writes while training reads,
    // and a read-only directory (a shared data set) has no room for a lock file.
    unsigned flags = MDB_NOTLS | (directory ? 0u : unsigned(MDB_NOSUBDIR));
    if (!writable) flags |= MDB_RDONLY | MDB_NOLOCK;
    if (writable) set_map_size(std::size_t(64) << 20);
    const int rc = mdb_env_open(env_, path.c_str(), flags, 0664);
    if (rc != MDB_SUCCESS) {
        mdb_env_close(env_);
        env_ = nullptr;
        TANDEM_THROW(DataError) << "cannot open LMDB database " << path << ": " << plain_words(rc);
    }
    // A constructor that throws runs no destructor: close the environment (and its map of the
    // file) here, or every refused open would keep both (the LMDB fuzzer's first find).
    try {
        check_pages(file, writable);
        LmdbTxn txn(*this, !writable);
        check(mdb_dbi_open(txn.get(), nullptr, 0, &dbi_), "mdb_dbi_open");
        txn.commit();
    } catch (...) {
        if (env_ != nullptr) mdb_env_close(env_);
        env_ = nullptr;
        throw;
    }
}

// LMDB maps the file and trusts it: a page past the end of a truncated file (a copy cut
// short, a full disk) is read through the map and kills the process with SIGBUS, and so does a
// damaged page number or offset. The meta page names the last page in use, so a file shorter
// than that page's end is refused here, before any cursor touches it; a reader's file also has
// its tree walked (data/lmdb_check.h).
void LmdbEnv::check_pages(const std::string& file, bool writable) {
    MDB_envinfo info;
    MDB_stat stat;
    check(mdb_env_info(env_, &info), "mdb_env_info");
    check(mdb_env_stat(env_, &stat), "mdb_env_stat");
    std::error_code error;
    const std::uintmax_t size = std::filesystem::file_size(file, error);
    if (error) return;  // a new, empty database: nothing written yet
    // In pages, not bytes: a damaged page number times the page size wraps around 2^64.
    const std::uintmax_t pages = size / stat.ms_psize;
    if (info.me_last_pgno >= pages) {
        // A page past the map the database states was never written: damage, not a short copy.
        if (info.me_last_pgno >= info.me_mapsize / stat.ms_psize)
            refuse_damaged("its meta page names page " + std::to_string(info.me_last_pgno) +
                           " as its last, past its map of " + std::to_string(info.me_mapsize) +
                           " bytes, and " + file + " holds " + std::to_string(pages) + " pages");
        refuse_damaged(file + " holds " + std::to_string(size) + " bytes but its pages run to " +
                       std::to_string((std::uintmax_t(info.me_last_pgno) + 1) * stat.ms_psize) +
                       " (the file was cut short: an interrupted copy or a full disk?)");
    }
    if (writable) return;
    if (const std::string why = lmdb_tree_problem(file, stat.ms_psize, info.me_last_txnid);
        !why.empty())
        refuse_damaged(why);
}

void LmdbEnv::refuse_damaged(const std::string& why) {
    if (env_ != nullptr) mdb_env_close(env_);
    env_ = nullptr;
    throw DataError("LMDB database " + path_ + " is damaged: " + why);
}

LmdbEnv::~LmdbEnv() {
    if (env_ != nullptr) mdb_env_close(env_);
}

void LmdbEnv::set_map_size(std::size_t bytes) {
    check(mdb_env_set_mapsize(env_, bytes), "mdb_env_set_mapsize");
}

std::size_t LmdbEnv::map_size() const {
    MDB_envinfo info;
    check(mdb_env_info(env_, &info), "mdb_env_info");
    return info.me_mapsize;
}

void LmdbEnv::check(int rc, const char* what) const {
    if (rc != MDB_SUCCESS)
        TANDEM_THROW(BackendError) << path_ << ": " << plain_words(rc) << " (in " << what << ")";
}

LmdbTxn::LmdbTxn(const LmdbEnv& env, bool read_only) : env_(env) {
    env.check(mdb_txn_begin(env.get(), nullptr, read_only ? MDB_RDONLY : 0, &txn_),
              "mdb_txn_begin");
}

LmdbTxn::~LmdbTxn() {
    if (txn_ != nullptr) mdb_txn_abort(txn_);
}

void LmdbTxn::commit() {
    MDB_txn* txn = txn_;
    txn_ = nullptr;  // committed or failed, the handle is gone either way
    env_.check(mdb_txn_commit(txn), "mdb_txn_commit");
}

}  // namespace tandem
