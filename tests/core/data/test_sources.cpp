#include <gtest/gtest.h>

#include <filesystem>

#include "data/file_list_source.h"
#include "data/idx_source.h"
#include "data/lmdb_source.h"
#include "data_fixtures.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

std::string source_message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "(no error)";
}

void write_png(const std::string& path, int i) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    ASSERT_TRUE(cv::imwrite(path, pattern_image(i, 6, 5, 3)));
}

TEST(Sources, FolderClassesAreSortedSubFolders) {
    TempDir dir;
    write_png(dir.file("zebra/b.png"), 0);
    write_png(dir.file("zebra/a.png"), 1);
    write_png(dir.file("ant/x.png"), 2);
    test::write_bytes(dir.file("ant/notes.txt"), "not an image");
    const auto s = folder_source(dir.path().string());
    EXPECT_EQ(s->size(), 3);
    EXPECT_EQ(s->classes(), 2);
    EXPECT_EQ(s->class_names(), (std::vector<std::string>{"ant", "zebra"}));
    EXPECT_EQ(s->label(0), 0);
    EXPECT_EQ(s->key(1), dir.file("zebra/a.png"));
    EXPECT_EQ(s->label(2), 1);
    const RawSample r = s->open_reader()->read(1);
    EXPECT_EQ(r.encoding, Encoding::png);
    EXPECT_EQ(r.label, 1);
    EXPECT_FALSE(r.bytes.empty());
}

TEST(Sources, FolderErrors) {
    TempDir dir;
    EXPECT_NE(source_message_of([&] { folder_source(dir.file("nope")); }).find("no such directory"),
              std::string::npos);
    EXPECT_NE(source_message_of([&] {
                  folder_source(dir.path().string());
              }).find("has no class sub-folders"),
              std::string::npos);
    std::filesystem::create_directories(dir.file("cat"));
    EXPECT_NE(
        source_message_of([&] { folder_source(dir.path().string()); }).find("holds no images"),
        std::string::npos);
}

TEST(Sources, ListFileLikeCaffe) {
    TempDir dir;
    write_png(dir.file("img/a b.png"), 0);
    write_png(dir.file("img/c.png"), 1);
    test::write_bytes(dir.file("list.txt"), "img/a b.png 3\n# comment\n\nimg/c.png 1\r\n");
    const auto s = list_source(dir.file("list.txt"));
    EXPECT_EQ(s->size(), 2);
    EXPECT_EQ(s->classes(), 4);
    EXPECT_EQ(s->key(0), dir.file("img/a b.png"));
    EXPECT_EQ(s->label(0), 3);
    EXPECT_EQ(list_source(dir.file("list.txt"), "", 10)->classes(), 10);
    EXPECT_NE(source_message_of([&] {
                  list_source(dir.file("list.txt"), "", 2);
              }).find("has label 3, out of range for 2 classes"),
              std::string::npos);
    test::write_bytes(dir.file("bad.txt"), "img/c.png 1\nimg/c.png x\n");
    EXPECT_NE(source_message_of([&] {
                  list_source(dir.file("bad.txt"));
              }).find("bad.txt:2: label 'x' is not a non-negative integer"),
              std::string::npos);
    test::write_bytes(dir.file("nolabel.txt"), "img/c.png\n");
    EXPECT_NE(source_message_of([&] {
                  list_source(dir.file("nolabel.txt"));
              }).find("nolabel.txt:1: expected 'path label'"),
              std::string::npos);
    test::write_bytes(dir.file("missing.txt"), "img/c.png 0\nimg/gone.png 1\n");
    EXPECT_NE(source_message_of([&] {
                  list_source(dir.file("missing.txt"));
              }).find("missing.txt:2: no such image file"),
              std::string::npos);
    test::write_bytes(dir.file("negative.txt"), "img/c.png -1\n");
    EXPECT_NE(source_message_of([&] {
                  list_source(dir.file("negative.txt"));
              }).find("is not a non-negative integer"),
              std::string::npos);
    test::write_bytes(dir.file("empty.txt"), "\n");
    EXPECT_NE(
        source_message_of([&] { list_source(dir.file("empty.txt")); }).find("holds no images"),
        std::string::npos);
    EXPECT_NE(
        source_message_of([&] { list_source(dir.file("none.txt")); }).find("cannot open list file"),
        std::string::npos);
}

TEST(Sources, LmdbReadsRecordsAndLabels) {
    TempDir dir;
    write_pattern_db(dir.file("db"), 5, 3, 4, 4, 1);
    const LmdbSource s(dir.file("db"));
    EXPECT_EQ(s.size(), 5);
    EXPECT_EQ(s.classes(), 3);
    EXPECT_EQ(s.label(4), 1);
    EXPECT_EQ(s.key(2), "00000002");
    const RawSample r = s.open_reader()->read(2);
    EXPECT_EQ(r.encoding, Encoding::raw);
    EXPECT_EQ(r.height, 4u);
    EXPECT_EQ(r.bytes.size(), 16u);
    EXPECT_EQ(static_cast<unsigned char>(r.bytes[5]),
              pattern_image(2, 4, 4, 1).at<unsigned char>(1, 1));
    EXPECT_NE(source_message_of([&] {
                  LmdbSource(dir.file("db"), 2);
              }).find("record '00000002' has label 2, out of range for 2 classes"),
              std::string::npos);
    EXPECT_NE(source_message_of([&] { LmdbSource(dir.file("nope")); }).find("no LMDB database at"),
              std::string::npos);
    write_records(dir.file("empty"), {});
    EXPECT_NE(source_message_of([&] { LmdbSource(dir.file("empty")); }).find("is empty"),
              std::string::npos);
}

// A data.mdb cut short (an interrupted copy) used to kill the process with SIGBUS inside
// mdb_cursor_get: it is refused when opened, naming the file, at several cut points.
TEST(Sources, TruncatedLmdbFileIsRefusedNotMapped) {
    TempDir dir;
    write_pattern_db(dir.file("db"), 400, 4, 16, 16, 3);
    const std::string data = dir.file("db/data.mdb");
    const auto full = std::filesystem::file_size(data);
    std::filesystem::copy_file(data, dir.file("whole.mdb"));
    for (const double keep : {0.9, 0.5, 0.2}) {
        std::filesystem::copy_file(dir.file("whole.mdb"), data,
                                   std::filesystem::copy_options::overwrite_existing);
        std::filesystem::resize_file(data, static_cast<std::uintmax_t>(double(full) * keep));
        const std::string message = source_message_of([&] { LmdbSource source(dir.file("db")); });
        EXPECT_NE(message.find("is damaged: " + data), std::string::npos)
            << keep << ": " << message;
        EXPECT_NE(message.find("cut short"), std::string::npos) << message;
    }
    // Shorter than the two meta pages: LMDB itself refuses it.
    std::filesystem::resize_file(data, 100);
    EXPECT_NE(source_message_of([&] { LmdbSource source(dir.file("db")); }).find(dir.file("db")),
              std::string::npos);
}

// A record whose header is damaged has no label: label() raises naming the key (it returned -1,
// which `tandem dbinfo` used as an index, corrupting the heap), and the other records read.
TEST(Sources, DamagedRecordHasNoLabel) {
    TempDir dir;
    std::vector<std::string> records;
    for (int i = 0; i < 4; ++i)
        records.push_back(encode_image_record(pattern_image(i, 4, 4, 1), i % 2, Encoding::raw, 95));
    records[1].replace(0, 4, "XXXX");                         // bad magic
    records[2].replace(12, 4, std::string("\0\0\0\x40", 4));  // height 2^30
    write_records(dir.file("db"), records);
    const LmdbSource s(dir.file("db"));
    EXPECT_EQ(s.damaged(), 2);
    EXPECT_EQ(s.label(0), 0);
    EXPECT_EQ(s.label(3), 1);
    const std::string bad_magic = source_message_of([&] { s.label(1); });
    EXPECT_NE(bad_magic.find("record '00000001' is not a Tandem record"), std::string::npos)
        << bad_magic;
    EXPECT_THROW(s.label(2), CorruptSampleError);
    EXPECT_NE(source_message_of([&] { s.label(2); }).find("'00000002'"), std::string::npos);
}

TEST(Sources, IdxAsRawRecords) {
    TempDir dir;
    std::string images = {'\0', '\0', char(8), char(3), 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3};
    for (int i = 0; i < 12; ++i) images += char(i);
    test::write_bytes(dir.file("img"), images);
    test::write_bytes(dir.file("lab"), std::string{'\0', '\0', char(8), char(1), 0, 0, 0, 2, 4, 1});
    const IdxSource s(dir.file("img"), dir.file("lab"));
    EXPECT_EQ(s.size(), 2);
    EXPECT_EQ(s.classes(), 5);
    const RawSample r = s.open_reader()->read(1);
    EXPECT_EQ(r.label, 1);
    EXPECT_EQ(r.height, 2u);
    EXPECT_EQ(r.width, 3u);
    EXPECT_EQ(r.bytes, std::string({6, 7, 8, 9, 10, 11}));
}

}  // namespace
}  // namespace tandem::test
