// The interaction data of docs/data-format.md: the text parser names bad lines by file, line
// and field; the layout keeps the last L items, pads in front and shifts ids by 1; the LMDB
// form reads back the same samples; a failed conversion leaves nothing behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "data/interactions.h"
#include "data/lmdb_source.h"
#include "data/synthetic_interactions.h"
#include "support/expect_error.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

std::vector<InteractionLine> parse(const std::string& text) {
    std::istringstream in(text);
    return parse_interaction_text(in, "data.tsv");
}

// The message of the DataError that parsing `text` raises.
std::string parse_error(const std::string& text) {
    try {
        parse(text);
    } catch (const DataError& e) {
        return e.what();
    }
    return "no error";
}

TEST(InteractionText, ParsesFieldsSkippingCommentsAndBlankLines) {
    const auto lines = parse("# a comment\n\nu1\t3 1 4\t0:0.5 7:-2\t2\r\nu2\t\t\t0\n");
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[0].user, "u1");
    EXPECT_EQ(lines[0].items, (std::vector<std::int64_t>{3, 1, 4}));
    ASSERT_EQ(lines[0].features.size(), 2u);
    EXPECT_EQ(lines[0].features[1].first, 7);
    EXPECT_FLOAT_EQ(lines[0].features[1].second, -2.0f);
    EXPECT_EQ(lines[0].label, 2);
    EXPECT_EQ(lines[0].line, 3);
    EXPECT_TRUE(lines[1].items.empty());  // no history and no features: allowed
    EXPECT_EQ(lines[1].line, 4);
}

TEST(InteractionText, BadLinesNameFileLineAndField) {
    const std::string ok = "u\t1 2\t0:1\t0\n";
    const std::pair<std::string, std::string> cases[] = {
        {ok + "u\t1 2\t0:1\n", "data.tsv:2: 3 tab-separated field(s), 4 expected"},
        {ok + "u\t1 x2\t0:1\t0\n", "data.tsv:2: field 2 (items): 'x2' is not an item id"},
        {ok + "u\t1 -2\t0:1\t0\n", "data.tsv:2: field 2 (items): '-2' is not an item id"},
        {ok + "u\t1\t0:1\t-1\n", "data.tsv:2: field 4 (label): '-1' is not a class number"},
        {ok + "u\t1\t0:1\t1 2\n", "data.tsv:2: field 4 (label): one class number expected"},
        {ok + "u\t1\t3\t1\n", "data.tsv:2: field 3 (features): '3' is not an index:value pair"},
        {ok + "u\t1\t3:1 3:2\t1\n", "data.tsv:2: field 3 (features): feature index 3 is given"},
        {ok + "u\t1\t3:nan\t1\n", "data.tsv:2: field 3 (features): feature value 'nan' is not"},
        {ok + "u\t1\t-3:1\t1\n", "data.tsv:2: field 3 (features): '-3' is not a feature index"},
        {ok + "\t1\t0:1\t1\n", "data.tsv:2: field 1 (user): a user id of 1 to 256 bytes"},
        {ok + "u\t16777215\t0:1\t1\n", "'16777215' is not an item id (a whole number in [0, "},
        {"# only a comment\n", "data.tsv holds no example"},
    };
    for (const auto& [text, expected] : cases)
        EXPECT_NE(parse_error(text).find(expected), std::string::npos)
            << "for " << text << " got: " << parse_error(text);
}

TEST(InteractionLayout, KeepsTheLastItemsPadsInFrontAndShiftsIds) {
    const auto lines = parse("a\t5 6 7 8\t1:0.5\t1\nb\t9\t\t0\n");
    const InteractionSet set = layout_interactions(lines, "data.tsv", {3, 4});
    ASSERT_EQ(set.width(), 7);
    EXPECT_EQ(set.items, 11);  // id 9 is stored as 10, so an Embedding needs 11 rows
    EXPECT_EQ(set.classes, 2);
    // a: the last three items (6 7 8, stored +1), then the features.
    EXPECT_EQ(std::vector<float>(set.samples.begin(), set.samples.begin() + 7),
              (std::vector<float>{7, 8, 9, 0, 0.5f, 0, 0}));
    // b: two pads before its one item.
    EXPECT_EQ(std::vector<float>(set.samples.begin() + 7, set.samples.end()),
              (std::vector<float>{0, 0, 10, 0, 0, 0, 0}));
    // Unset: the longest sequence and the largest index + 1.
    const InteractionSet fit = layout_interactions(lines, "data.tsv", {});
    EXPECT_EQ(fit.length, 4);
    EXPECT_EQ(fit.features, 2);
    expect_error<DataError>(
        [&] {
            layout_interactions(lines, "data.tsv", {3, 1});
        },
        "data.tsv:1: field 3 (features): index 1 is past the 1 features asked");
}

TEST(InteractionLayout, RefusesASetTooLargeBeforeAllocatingIt) {
    // Each sample may be 16M values wide, but 20 of them would be 1.3 GB (the fuzzer's find).
    std::string text;
    for (int i = 0; i < 20; ++i) text += "u\t1\t16777205:1\t0\n";
    const auto lines = parse(text);
    expect_error<DataError>([&] { layout_interactions(lines, "data.tsv", {}); },
                            "data.tsv: 20 examples of 16777207 values are more "
                            "than the 268435456 values a set is laid out in");
    // One such sample is within the limit.
    EXPECT_EQ(layout_interactions(parse("u\t1\t16777205:1\t0\n"), "data.tsv", {}).features,
              16777206);
}

TEST(InteractionLayout, RefusesSamplesTooWideBeforeAllocatingThem) {
    // One damaged index would make every sample 16M values wide (64 MB each).
    const auto lines = parse("a\t1\t16777215:1\t0\n");
    expect_error<DataError>([&] { layout_interactions(lines, "data.tsv", {}); },
                            "data.tsv: samples of 1 items and 16777216 features "
                            "are wider than 16777216 values");
    EXPECT_THROW(layout_interactions(lines, "data.tsv", {-1, 0}), ConfigError);
}

TEST(InteractionDb, ReadsBackTheTextsSamples) {
    TempDir dir;
    SyntheticInteractionOptions o;
    o.users = 40;
    write_synthetic_interactions(dir.file("in.tsv"), o, false);
    const InteractionSet text = read_interactions(dir.file("in.tsv"), {8, 0});
    write_interaction_db(text, dir.file("db"), false);
    const InteractionSet db = read_interactions(dir.file("db"), {});
    EXPECT_EQ(db.length, 8);
    EXPECT_EQ(db.features, text.features);
    EXPECT_EQ(db.items, text.items);
    EXPECT_EQ(db.classes, text.classes);
    EXPECT_EQ(db.samples, text.samples);
    EXPECT_EQ(db.labels, text.labels);
    EXPECT_EQ(db.users, text.users);
    EXPECT_EQ(LmdbSource(dir.file("db")).key(3), "00000003 user3");
    // Another shape than the database's is refused, saying what it holds.
    expect_error<ConfigError>(
        [&] {
            read_interactions(dir.file("db"), {9, 0});
        },
        "holds sequences of 8 items");
    EXPECT_THROW(write_interaction_db(text, dir.file("db"), false), ConfigError);
}

TEST(InteractionDb, ABadLineWritesNothing) {
    TempDir dir;
    std::ofstream(dir.file("in.tsv")) << "u\t1\t0:1\t0\nv\t2\t0:x\t1\n";
    EXPECT_THROW(read_interactions(dir.file("in.tsv"), {}), DataError);
    EXPECT_TRUE(dir.entries() == std::vector<std::string>{"in.tsv"});
}

TEST(SyntheticInteractions, SameSeedSameFileAndNoOverwrite) {
    TempDir dir;
    SyntheticInteractionOptions o;
    o.users = 20;
    write_synthetic_interactions(dir.file("a.tsv"), o, false);
    std::ostringstream again;
    write_synthetic_interactions(again, o);
    std::ifstream in(dir.file("a.tsv"));
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), again.str());
    EXPECT_THROW(write_synthetic_interactions(dir.file("a.tsv"), o, false), ConfigError);
    o.items = 2;  // fewer than the 4 classes
    EXPECT_THROW(write_synthetic_interactions(dir.file("b.tsv"), o, false), ConfigError);
    EXPECT_TRUE(dir.entries() == std::vector<std::string>{"a.tsv"});  // no b.tsv.partial left
}

}  // namespace
}  // namespace tandem::test
