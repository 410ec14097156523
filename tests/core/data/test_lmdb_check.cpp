// A damaged LMDB file is refused when opened, never followed (data/lmdb_check.h): LMDB maps
// the file and trusts its page numbers and offsets, and damaged copies of a small database
// ended the process with SIGBUS, SIGSEGV or an abort in 22 of 300 trials before the check.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "base/error.h"
#include "data/db_builder.h"
#include "data/lmdb_check.h"
#include "data_fixtures.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

std::string file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes_to(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Opens the database and decodes every record, as `tandem mkdb --check` does (a damaged record
// is named, not thrown); what it says when it refuses the database.
std::string open_and_read(const std::string& path) {
    try {
        (void)check_db(path, 1);
        return "(read)";
    } catch (const DataError& e) {
        return e.what();
    }
}

}  // namespace

// Small records in the leaves and large ones on overflow pages, under two levels of branches;
// then bytes overwritten at random, the meta pages too, a few to a few hundred at a time.
TEST(LmdbCheck, DamagedFilesAreRefusedNeverFollowed) {
    TempDir dir;
    std::vector<std::string> records;
    for (int i = 0; i < 600; ++i)
        records.push_back(
            encode_image_record(pattern_image(i, i % 10 ? 6 : 40, 6, 3), i % 3, Encoding::raw, 95));
    write_records(dir.file("db"), records);
    const std::string data = dir.file("db/data.mdb"), whole = file_bytes(data);
    EXPECT_EQ(open_and_read(dir.file("db")), "(read)");
    std::mt19937 random(20261128);
    int refused = 0;
    constexpr int kTrials = 200;
    for (int trial = 0; trial < kTrials; ++trial) {
        std::string bytes = whole;
        const int changes = std::array{1, 4, 16, 64, 256}[random() % 5];
        for (int c = 0; c < changes; ++c) {
            const std::size_t at = random() % 4 == 0 ? random() % 8192 : random() % bytes.size();
            bytes[at] = static_cast<char>(random());
        }
        write_bytes_to(data, bytes);
        const std::string outcome = open_and_read(dir.file("db"));
        refused += outcome.find("is damaged") != std::string::npos;
    }
    // Most damage lands in records' bytes, which the record checks catch; the rest is refused.
    EXPECT_GT(refused, kTrials / 10);
}

// What the check names, for damage made on purpose.
TEST(LmdbCheck, NamesWhatIsDamaged) {
    TempDir dir;
    write_pattern_db(dir.file("db"), 300, 3, 6, 6, 3);
    const std::string data = dir.file("db/data.mdb"), whole = file_bytes(data);
    const std::size_t page = 4096;
    // The second meta page stating another page size: LMDB would place it past the file.
    std::string bytes = whole;
    bytes[page + 40 + 2] = 1;
    write_bytes_to(data, bytes);
    EXPECT_NE(open_and_read(dir.file("db")).find("its meta pages state two page sizes (4096 and"),
              std::string::npos)
        << open_and_read(dir.file("db"));
    // Every child of the root pointing past the file. The newer meta page (the larger
    // transaction number, at byte 144) names the root (at byte 128).
    bytes = whole;
    const auto number = [&](std::size_t at, int n) {
        std::uint64_t v = 0;
        for (int i = n - 1; i >= 0; --i)
            v = v << 8 | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(i)]);
        return v;
    };
    const std::size_t meta = number(page + 144, 8) > number(144, 8) ? page : 0;
    const std::size_t root = number(meta + 128, 8);
    ASSERT_EQ(number(root * page + 10, 2) & 0x01, 0x01u) << "300 records need a branch page";
    const std::size_t lower = number(root * page + 12, 2);
    for (std::size_t p = 16; p < lower; p += 2) {
        bytes[root * page + number(root * page + p, 2) + 2] =
            0x7f;  // the child's page number's high half
    }
    write_bytes_to(data, bytes);
    EXPECT_NE(open_and_read(dir.file("db")).find("past the"), std::string::npos)
        << open_and_read(dir.file("db"));
    // The newer meta page naming a last page so far past the file that its size in bytes wraps
    // around 2^64 (the LMDB fuzzer's first find: the cut-short check passed it, LMDB failed the
    // first transaction, and the refused open kept the file mapped).
    bytes = whole;
    bytes[meta + 136 + 7] = static_cast<char>(0xff);
    write_bytes_to(data, bytes);
    EXPECT_NE(open_and_read(dir.file("db")).find("as its last, past its map of"), std::string::npos)
        << open_and_read(dir.file("db"));
    // Both meta pages naming one transaction, page 0's tree rooted on a meta page: LMDB reads
    // page 0 on a tie and asserted 'root > 1', ending the process, where the check had walked
    // page 1's sound tree (the LMDB fuzzer's second find).
    bytes = whole;
    for (int i = 0; i < 8; ++i) {
        bytes[(page - meta) + 144 + static_cast<std::size_t>(i)] =
            bytes[meta + 144 + static_cast<std::size_t>(i)];
        bytes[128 + static_cast<std::size_t>(i)] = 0;  // page 0's root
    }
    bytes[88 + 6] = 1, bytes[88 + 7] = 0;  // page 0's depth
    write_bytes_to(data, bytes);
    EXPECT_NE(open_and_read(dir.file("db")).find("its tree names page 0, a meta page"),
              std::string::npos)
        << open_and_read(dir.file("db"));
    // The record count stated apart from the tree.
    bytes = whole;
    for (const std::size_t meta : {std::size_t(0), page}) bytes[meta + 88 + 32] ^= 1;
    write_bytes_to(data, bytes);
    EXPECT_NE(open_and_read(dir.file("db")).find("records but its pages hold 300"),
              std::string::npos)
        << open_and_read(dir.file("db"));
    write_bytes_to(data, whole);
    EXPECT_EQ(open_and_read(dir.file("db")), "(read)");
}

}  // namespace tandem::test
