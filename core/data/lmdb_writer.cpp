#include "data/lmdb_writer.h"

#include <cstdio>
#include <filesystem>

#include "base/atomic_file.h"
#include "base/error.h"

namespace tandem {

namespace fs = std::filesystem;

LmdbWriter::LmdbWriter(const std::string& path, bool overwrite, std::size_t commit_every)
    : path_(path), partial_(path + ".partial"), overwrite_(overwrite),
      commit_every_(commit_every > 0 ? commit_every : 1) {
    std::error_code error;
    TANDEM_CHECK_AS(ConfigError, overwrite || !fs::exists(path, error))
        << path << " already exists; remove it or pass --overwrite";
    fs::remove_all(partial_, error);  // what an earlier run that was killed left
    env_ = std::make_unique<LmdbEnv>(partial_, true);
}

LmdbWriter::~LmdbWriter() {
    if (!env_) return;  // finished
    env_.reset();
    std::error_code error;
    fs::remove_all(partial_, error);
}

void LmdbWriter::put(std::string key, std::string value) {
    pending_.emplace_back(std::move(key), std::move(value));
    if (pending_.size() >= commit_every_) commit_pending();
}

void LmdbWriter::set_class_names(std::vector<std::string> names) {
    for (const auto& name : names)
        TANDEM_CHECK_AS(ConfigError, name.find('\n') == std::string::npos)
            << path_ << ": the class name '" << name << "' holds a line break";
    class_names_ = std::move(names);
}

void LmdbWriter::finish() {
    commit_pending();
    env_.reset();  // closes the database before it moves
    if (!class_names_.empty()) {
        std::string text;
        for (const auto& name : class_names_) text += name + "\n";
        write_file_atomic(partial_ + "/" + kClassNamesFile, {text.data(), text.size()});
    }
    std::error_code error;
    if (overwrite_) fs::remove_all(path_, error);
    fs::rename(partial_, path_, error);
    TANDEM_CHECK_AS(DataError, !error) << "could not move the finished database " << partial_
                                       << " to " << path_ << ": " << error.message();
}

void LmdbWriter::commit_pending() {
    if (pending_.empty()) return;
    for (;;) {
        if (try_commit()) break;
        // No transaction may be open while the map grows; try_commit's has ended.
        env_->set_map_size(env_->map_size() * 2);
    }
    written_ += static_cast<std::int64_t>(pending_.size());
    pending_.clear();
}

bool LmdbWriter::try_commit() {
    MDB_txn* txn = nullptr;
    env_->check(mdb_txn_begin(env_->get(), nullptr, 0, &txn), "mdb_txn_begin");
    int rc = MDB_SUCCESS;
    for (auto& [key, value] : pending_) {
        MDB_val k{key.size(), key.data()};
        MDB_val v{value.size(), value.data()};
        rc = mdb_put(txn, env_->dbi(), &k, &v, MDB_NOOVERWRITE);
        if (rc != MDB_SUCCESS) break;
    }
    if (rc != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        if (rc == MDB_MAP_FULL) return false;
        // The failing key is the first one not in the database.
        TANDEM_CHECK_AS(ConfigError, rc != MDB_KEYEXIST) << path_ << ": a key is written twice";
        env_->check(rc, "mdb_put");
    }
    rc = mdb_txn_commit(txn);  // frees the transaction whatever it returns
    if (rc == MDB_MAP_FULL) return false;
    env_->check(rc, "mdb_txn_commit");
    return true;
}

std::string record_key(std::int64_t index) {
    char text[32];
    std::snprintf(text, sizeof text, "%08lld", static_cast<long long>(index));
    return text;
}

}  // namespace tandem
