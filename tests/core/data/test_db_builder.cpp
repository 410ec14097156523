#include <gtest/gtest.h>

#include <filesystem>

#include "data/file_list_source.h"
#include "data/image_decode.h"
#include "data/lmdb_source.h"
#include "data_fixtures.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

// A folder of PNG pattern images, 2 classes x 5, of varied sizes.
std::shared_ptr<FileListSource> png_folder(const TempDir& dir) {
    for (int i = 0; i < 10; ++i) {
        const std::string folder = dir.file(i % 2 ? "b" : "a");
        std::filesystem::create_directories(folder);
        cv::imwrite(folder + "/" + std::to_string(i) + ".png", pattern_image(i, 5 + i, 7, 3));
    }
    return folder_source(dir.path().string());
}

void expect_same_images(const DataSource& a, const DataSource& b, int channels) {
    ASSERT_EQ(a.size(), b.size());
    auto ra = a.open_reader(), rb = b.open_reader();
    for (std::int64_t i = 0; i < a.size(); ++i) {
        const RawSample sa = ra->read(i), sb = rb->read(i);
        EXPECT_EQ(sa.label, sb.label) << i;
        const cv::Mat ma = decode_image(sa, channels), mb = decode_image(sb, channels);
        ASSERT_EQ(ma.size(), mb.size()) << i;
        EXPECT_EQ(cv::norm(ma, mb, cv::NORM_INF), 0) << "sample " << i;
    }
}

TEST(DbBuilder, FolderToLmdbKeepsPixelsAndLabels) {
    for (Encoding e : {Encoding::png, Encoding::raw}) {
        TempDir dir;
        const auto folder = png_folder(dir);
        DbBuildOptions o;
        o.encoding = e;
        o.threads = 3;
        std::int64_t last_progress = 0;
        o.progress = [&](std::int64_t done, std::int64_t total) {
            EXPECT_EQ(total, 10);
            last_progress = done;
        };
        const DbBuildResult r = build_db(*folder, dir.file("db"), o);
        EXPECT_EQ(r.written, 10);
        EXPECT_TRUE(r.skipped.empty());
        EXPECT_EQ(last_progress, 10);
        const LmdbSource db(dir.file("db"));
        EXPECT_EQ(db.classes(), 2);
        expect_same_images(*folder, db, 0);
        EXPECT_EQ(db.open_reader()->read(3).encoding, e);
        EXPECT_TRUE(check_db(dir.file("db"), 2).empty());
    }
}

TEST(DbBuilder, ShuffleResizeAndThreadsGiveTheSameDatabase) {
    TempDir dir;
    const auto folder = png_folder(dir);
    DbBuildOptions o;
    o.shuffle = true;
    o.resize = 4;
    o.threads = 1;
    build_db(*folder, dir.file("one"), o);
    o.threads = 4;
    build_db(*folder, dir.file("four"), o);
    const LmdbSource one(dir.file("one")), four(dir.file("four"));
    expect_same_images(one, four, 0);
    const RawSample s = one.open_reader()->read(0);
    EXPECT_EQ(std::min(s.height, s.width), 4u);
    std::vector<std::int32_t> labels;
    for (std::int64_t i = 0; i < one.size(); ++i) labels.push_back(one.label(i));
    EXPECT_NE(labels, (std::vector<std::int32_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1})) << "shuffled";
    EXPECT_THROW(build_db(*folder, dir.file("one"), o), ConfigError) << "exists";
    o.overwrite = true;
    EXPECT_NO_THROW(build_db(*folder, dir.file("one"), o));
}

TEST(DbBuilder, CorruptImagesAreSkippedAndCheckFindsDamage) {
    TempDir dir;
    png_folder(dir);
    test::write_bytes(dir.file("a/zz_broken.png"), "\x89PNG\r\n\x1a\n not really");
    const auto folder = folder_source(dir.path().string());
    DbBuildOptions o;
    const DbBuildResult r = build_db(*folder, dir.file("db"), o);
    EXPECT_EQ(r.written, 10);
    ASSERT_EQ(r.skipped.size(), 1u);
    EXPECT_NE(r.skipped[0].find("zz_broken.png"), std::string::npos) << r.skipped[0];
    o.strict = true;
    o.overwrite = true;
    EXPECT_THROW(build_db(*folder, dir.file("db"), o), CorruptSampleError);

    std::vector<std::string> records = {
        encode_image_record(pattern_image(0, 8, 8, 3), 0, Encoding::jpeg, 90)};
    records.push_back(records[0].substr(0, records[0].size() - 40));  // truncated record
    std::string bad_jpeg = records[0];
    bad_jpeg[kRecordHeaderSize + 300] ^= 0x5A;
    bad_jpeg.replace(kRecordHeaderSize + 2, 40, 40, '\x01');  // headers destroyed
    records.push_back(bad_jpeg);
    write_records(dir.file("damaged"), records);
    const auto problems = check_db(dir.file("damaged"), 2);
    ASSERT_EQ(problems.size(), 2u);
    EXPECT_NE(problems[0].find("'00000001' is truncated"), std::string::npos) << problems[0];
    EXPECT_NE(problems[1].find("cannot decode image '00000002'"), std::string::npos) << problems[1];
}

}  // namespace
}  // namespace tandem::test
