#include "data/interactions.h"

#include <algorithm>
#include <filesystem>

#include "base/error.h"
#include "data/lmdb_source.h"
#include "data/lmdb_writer.h"
#include "data/record.h"

namespace tandem {
namespace {

// The examples of a database; only their count (in `examples`) and the set's other fields
// without `keep`.
InteractionSet read_db(const std::string& path, const InteractionShape& asked, bool keep,
                       std::int64_t& examples) {
    const LmdbSource source(path);
    auto reader = source.open_reader();
    InteractionSet set;
    set.classes = source.classes();
    std::vector<float> row;
    for (std::int64_t i = 0; i < source.size(); ++i) {
        const RawSample s = reader->read(i);
        // decode_interaction refuses another encoding before it writes, naming the key.
        row.resize(s.encoding == Encoding::interaction ? std::size_t(s.height) + s.width : 0);
        const std::int64_t largest = decode_interaction(s, row.data());
        if (i == 0) {
            set.length = s.height, set.features = s.width;
            TANDEM_CHECK_AS(ConfigError,
                            (asked.length == 0 || asked.length == set.length) &&
                                (asked.features == 0 || asked.features == set.features))
                << path << " holds sequences of " << set.length << " items and " << set.features
                << " features; length = " << asked.length << ", features = " << asked.features
                << " asked (convert the text again with --length= and --features=, or ask 0)";
            if (keep) set.samples.reserve(std::size_t(source.size() * set.width()));
        }
        TANDEM_CHECK_AS(DataError, s.height == set.length && s.width == set.features)
            << path << ": record '" << s.key << "' holds " << s.height << " items and " << s.width
            << " features, the first record " << set.length << " and " << set.features;
        set.items = std::max(set.items, largest + 1);
        examples += 1;
        if (!keep) continue;
        set.samples.insert(set.samples.end(), row.begin(), row.end());
        set.labels.push_back(s.label);
        const std::size_t space = s.key.find(' ');
        set.users.push_back(space == std::string::npos ? s.key : s.key.substr(space + 1));
    }
    return set;
}

}  // namespace

bool is_lmdb_folder(const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_directory(path, ec) &&
           std::filesystem::exists(std::filesystem::path(path) / "data.mdb", ec);
}

InteractionSet read_interactions(const std::string& path, const InteractionShape& shape) {
    check_interaction_shape(shape);
    std::int64_t examples = 0;
    if (is_lmdb_folder(path)) return read_db(path, shape, true, examples);
    return layout_interactions(read_interaction_text(path), path, shape);
}

InteractionInfo interaction_info(const std::string& path, const InteractionShape& shape) {
    check_interaction_shape(shape);
    std::int64_t examples = 0;
    InteractionSet set;
    if (is_lmdb_folder(path)) {
        set = read_db(path, shape, false, examples);
    } else {
        set = layout_interactions(read_interaction_text(path), path, shape);
        examples = set.size();
    }
    return {set.length, set.features, set.items, set.classes, examples};
}

void write_interaction_db(const InteractionSet& set, const std::string& path, bool overwrite) {
    LmdbWriter writer(path, overwrite);
    const auto width = std::size_t(set.width());
    for (std::int64_t n = 0; n < set.size(); ++n) {
        const RecordHeader h{Encoding::interaction, set.labels[std::size_t(n)],
                             std::uint32_t(set.length), std::uint32_t(set.features), 1};
        const auto* row =
            reinterpret_cast<const unsigned char*>(set.samples.data() + std::size_t(n) * width);
        writer.put(record_key(n) + " " + set.users[std::size_t(n)],
                   encode_record(h, {row, width * sizeof(float)}));
    }
    writer.finish();
}

}  // namespace tandem
