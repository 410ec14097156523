#include "data/lmdb_source.h"

#include <algorithm>
#include <filesystem>
#include <span>

#include "base/atomic_file.h"
#include "data/lmdb_writer.h"

namespace tandem {
namespace {

std::span<const unsigned char> as_bytes(const MDB_val& v) {
    return {static_cast<const unsigned char*>(v.mv_data), v.mv_size};
}

}  // namespace

class LmdbSource::Reader final : public SourceReader {
public:
    explicit Reader(const LmdbSource& source) : source_(source), txn_(*source.env_, true) {}

    RawSample read(std::int64_t index) override {
        const std::string& key = source_.keys_.at(static_cast<std::size_t>(index));
        MDB_val k{key.size(), const_cast<char*>(key.data())};
        MDB_val v{};
        const int rc = mdb_get(txn_.get(), source_.env_->dbi(), &k, &v);
        TANDEM_CHECK_AS(DataError, rc != MDB_NOTFOUND)
            << source_.env_->path() << ": record '" << key
            << "' has gone since the database was opened";
        source_.env_->check(rc, "mdb_get");
        // decode_record throws DataError for damage; the loader treats it as a corrupt sample.
        RecordView view;
        try {
            view = decode_record(as_bytes(v), key);
        } catch (const DataError& e) {
            throw CorruptSampleError(source_.env_->path() + ": " + e.what());
        }
        RawSample s;
        s.key = key;
        s.origin = source_.env_->path();
        s.label = view.header.label;
        s.encoding = view.header.encoding;
        s.height = view.header.height;
        s.width = view.header.width;
        s.channels = view.header.channels;
        s.bytes.assign(reinterpret_cast<const char*>(view.payload.data()), view.payload.size());
        return s;
    }

private:
    const LmdbSource& source_;
    LmdbTxn txn_;
};

LmdbSource::LmdbSource(const std::string& path, std::int64_t classes)
    : env_(std::make_shared<LmdbEnv>(path, false)) {
    TANDEM_CHECK_AS(ConfigError, classes >= 0) << "classes must be >= 0, got " << classes;
    std::int32_t largest = -1;
    {
        LmdbTxn txn(*env_, true);
        MDB_cursor* raw = nullptr;
        env_->check(mdb_cursor_open(txn.get(), env_->dbi(), &raw), "mdb_cursor_open");
        std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> cursor(raw, mdb_cursor_close);
        MDB_val k{}, v{};
        for (int rc = mdb_cursor_get(raw, &k, &v, MDB_FIRST); rc != MDB_NOTFOUND;
             rc = mdb_cursor_get(raw, &k, &v, MDB_NEXT)) {
            env_->check(rc, "mdb_cursor_get");
            keys_.emplace_back(static_cast<const char*>(k.mv_data), k.mv_size);
            std::int32_t label = kDamaged;
            try {
                const RecordHeader header = decode_record(as_bytes(v), keys_.back()).header;
                label = header.label;
                interaction_records_ += header.encoding == Encoding::interaction ? 1 : 0;
            } catch (const DataError& e) {
                damage_.emplace(keys_.size() - 1, e.what());
            }
            labels_.push_back(label);
            largest = std::max(largest, label);
        }
    }
    TANDEM_CHECK_AS(DataError, !keys_.empty()) << "LMDB database " << path << " is empty";
    const std::string names_path = path + "/" + kClassNamesFile;
    std::error_code error;
    if (std::filesystem::is_regular_file(names_path, error)) {
        const std::vector<char> text = read_file(names_path);
        std::string name;
        for (char c : text) {
            if (c != '\n') {
                name += c;
                continue;
            }
            class_names_.push_back(std::move(name));
            name.clear();
        }
        if (!name.empty()) class_names_.push_back(std::move(name));
        TANDEM_CHECK_AS(DataError, largest < static_cast<std::int32_t>(class_names_.size()))
            << names_path << " names " << class_names_.size() << " classes, but a record of "
            << path << " has label " << largest;
    }
    classes_ = classes > 0 ? classes
                           : std::max<std::int64_t>(largest + 1, std::int64_t(class_names_.size()));
    for (std::size_t i = 0; i < labels_.size(); ++i)
        TANDEM_CHECK_AS(DataError, labels_[i] < classes_)
            << path << ": record '" << keys_[i] << "' has label " << labels_[i]
            << ", out of range for " << classes_ << " classes";
}

std::int32_t LmdbSource::label(std::int64_t index) const {
    const std::int32_t label = labels_.at(static_cast<std::size_t>(index));
    if (label == kDamaged)
        throw CorruptSampleError(env_->path() + ": " + damage_.at(std::size_t(index)));
    return label;
}

std::string LmdbSource::key(std::int64_t index) const {
    return keys_.at(static_cast<std::size_t>(index));
}

SampleKind LmdbSource::sample_kind() const {
    const std::int64_t readable = size() - damaged();
    return 2 * interaction_records_ > readable ? SampleKind::interaction : SampleKind::image;
}

std::string LmdbSource::description() const {
    const bool interactions = sample_kind() == SampleKind::interaction;
    return "LMDB " + env_->path() + " (" + std::to_string(size()) +
           (interactions ? " interaction records, " : " records, ") + std::to_string(classes_) +
           " classes)";
}

std::unique_ptr<SourceReader> LmdbSource::open_reader() const {
    return std::make_unique<Reader>(*this);
}

}  // namespace tandem
