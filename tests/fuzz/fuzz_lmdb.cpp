// libFuzzer: arbitrary bytes as an LMDB database's data.mdb, opened and read the way a recipe's
// T.data.lmdb and `tandem dbinfo` do (data/lmdb_source.h): every key walked when opened, then
// every record read. LMDB maps the file and trusts each page number and offset in it, so a
// damaged file must be refused by our checks (data/lmdb_check.h) before LMDB follows it: a
// DataError or BackendError naming the database is the only way out; a crash, a hang or an
// out-of-bounds read is a find. The seeds are small databases `tandem mkdb` wrote (a branch
// over several leaves, records on overflow pages). The loop is `check_db`'s (data/db_builder.h)
// without decoding the images, which fuzz_record and fuzz_image cover: db_builder.cpp would
// bring the tensors and devices into this build of the parsers alone.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.h"
#include "data/lmdb_source.h"

namespace {

// One folder for the whole run, each input written over the last; removed when the run exits
// (libFuzzer ends with exit(), which runs static destructors).
struct DatabaseFolder {
    std::string path;
    DatabaseFolder() {
        char pattern[] = "/tmp/tandem-fuzz-lmdb-XXXXXX";
        if (!mkdtemp(pattern)) std::abort();
        path = pattern;
    }
    ~DatabaseFolder() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
};

const std::string& database_folder() {
    static const DatabaseFolder folder;
    return folder.path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tandem;
    const std::string& folder = database_folder();
    {
        std::ofstream out(folder + "/data.mdb", std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    try {
        const LmdbSource source(folder);
        const auto reader = source.open_reader();
        for (std::int64_t i = 0; i < source.size(); ++i) try {
                (void)reader->read(i);
            } catch (const CorruptSampleError&) {
            }
    } catch (const DataError&) {
    } catch (const BackendError&) {
    }
    return 0;
}
