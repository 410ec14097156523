// The loader over a database of interaction records (issue 18; docs/data-format.md): a streamed
// epoch is the in-memory data set's (T.data.interactions) samples and labels, shuffled; shards
// partition it; damaged records and records of the other kind are skipped and counted as corrupt
// images are; image transforms and a second record shape are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "data/db_builder.h"
#include "data/interactions.h"
#include "data/lmdb_source.h"
#include "data/loader.h"
#include "data/synthetic_interactions.h"
#include "data_fixtures.h"
#include "support/expect_error.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

// Synthetic users converted to a database, and the same database read into memory.
struct InteractionDb {
    TempDir dir;
    std::string path = dir.file("db");
    InteractionSet memory;
    explicit InteractionDb(std::int64_t users) {
        SyntheticInteractionOptions o;
        o.users = users;
        o.length = 9;
        o.features = 5;
        write_synthetic_interactions(dir.file("users.tsv"), o, false);
        write_interaction_db(read_interactions(dir.file("users.tsv"), {6, 0}), path, false);
        memory = read_interactions(path, {});
    }
    std::vector<float> row(std::int64_t index) const {
        const auto w = std::size_t(memory.width());
        const float* p = memory.samples.data() + std::size_t(index) * w;
        return {p, p + w};
    }
};

LoaderOptions streaming(int threads, std::int64_t batch = 7) {
    LoaderOptions o;
    o.batch = batch;
    o.threads = threads;
    o.seed = 5;
    o.last = LastBatch::keep;
    o.quiet = true;
    return o;
}

// Every sample of an epoch by source index (each must come once), with its label.
struct Streamed {
    std::map<std::int64_t, std::vector<float>> samples;
    std::map<std::int64_t, std::int32_t> labels;
    std::vector<std::int64_t> order;
};

Streamed stream_epoch(Loader& loader, std::int64_t epoch, std::int64_t width) {
    Streamed s;
    loader.start_epoch(epoch);
    while (auto b = loader.next()) {
        EXPECT_EQ(b->images.shape(), Shape({b->count, 1, 1, width}));
        const std::vector<float> values = b->images.to_vector();
        const int* labels = b->labels.data<int>();
        for (std::int64_t i = 0; i < b->count; ++i) {
            const std::int64_t index = b->indices[std::size_t(i)];
            const auto* row = values.data() + std::size_t(i * width);
            EXPECT_TRUE(s.samples.emplace(index, std::vector<float>(row, row + width)).second)
                << "sample " << index << " came twice";
            s.labels[index] = labels[i];
            s.order.push_back(index);
        }
    }
    return s;
}

// The message of the `E` that reading epoch 1 raises.
template <class E>
std::string epoch_error(Loader& loader) {
    loader.start_epoch(1);
    try {
        while (loader.next()) {
        }
    } catch (const E& e) {
        return e.what();
    }
    ADD_FAILURE() << "the epoch ended without an error";
    return "";
}

std::string interaction_record(const std::vector<float>& row, std::uint32_t length,
                               std::int32_t label) {
    const RecordHeader h{Encoding::interaction, label, length, std::uint32_t(row.size()) - length,
                         1};
    return encode_record(
        h, {reinterpret_cast<const unsigned char*>(row.data()), row.size() * sizeof(float)});
}

TEST(LoaderInteractions, AStreamedEpochIsTheInMemorySetShuffled) {
    const InteractionDb db(61);
    auto source = std::make_shared<LmdbSource>(db.path);
    EXPECT_EQ(source->sample_kind(), SampleKind::interaction);
    EXPECT_NE(source->description().find("61 interaction records"), std::string::npos);
    Loader loader(source, streaming(3));
    const Streamed s = stream_epoch(loader, 1, db.memory.width());
    ASSERT_EQ(std::int64_t(s.samples.size()), db.memory.size());
    for (const auto& [index, sample] : s.samples) {
        EXPECT_EQ(sample, db.row(index)) << "sample " << index;
        EXPECT_EQ(s.labels.at(index), db.memory.labels[std::size_t(index)]) << "sample " << index;
    }
    EXPECT_EQ(s.order, loader.shard_order(1));  // in the epoch's permutation, not the file's
    EXPECT_NE(s.order, stream_epoch(loader, 2, db.memory.width()).order);
    EXPECT_EQ(loader.stats().skipped, 0);
    EXPECT_EQ(loader.stats().images_decoded, 2 * 61);
    // The batches are the same whatever the number of decode threads.
    Loader one(source, streaming(1));
    EXPECT_EQ(stream_epoch(one, 1, db.memory.width()).order, s.order);
}

TEST(LoaderInteractions, ShardedEpochsPartitionTheSet) {
    const InteractionDb db(50);
    auto source = std::make_shared<LmdbSource>(db.path);
    std::map<std::int64_t, int> seen;
    for (int shard = 0; shard < 3; ++shard) {
        LoaderOptions o = streaming(2, 4);
        o.shard_index = shard;
        o.shard_count = 3;
        Loader loader(source, o);
        const Streamed s = stream_epoch(loader, 4, db.memory.width());
        EXPECT_EQ(std::int64_t(s.samples.size()), loader.shard_size());
        for (const auto& [index, sample] : s.samples) {
            seen[index] += 1;
            EXPECT_EQ(sample, db.row(index)) << "sample " << index;
        }
    }
    ASSERT_EQ(std::int64_t(seen.size()), db.memory.size());
    for (const auto& [index, count] : seen) EXPECT_EQ(count, 1) << "sample " << index;
}

TEST(LoaderInteractions, DamagedAndOtherKindRecordsAreSkippedAndCounted) {
    TempDir dir;
    const std::vector<float> good{0, 3, 4, 0.5f, -1}, other{2, 1, 7, 0, 0};
    std::vector<float> nan_feature = good, half_id = good;
    nan_feature[4] = std::numeric_limits<float>::quiet_NaN();
    half_id[1] = 2.5f;
    std::string truncated = interaction_record(good, 3, 0);
    truncated.resize(truncated.size() - 4);
    write_records(dir.file("db"),
                  {interaction_record(good, 3, 0), interaction_record(other, 3, 1),
                   interaction_record(nan_feature, 3, 1), truncated,
                   encode_image_record(pattern_image(0, 4, 4, 1), 0, Encoding::png, 95),
                   interaction_record(half_id, 3, 0), interaction_record(other, 3, 2)});
    auto source = std::make_shared<LmdbSource>(dir.file("db"));
    ASSERT_EQ(source->sample_kind(), SampleKind::interaction);  // 6 of the 7 records
    Loader loader(source, streaming(2, 2));
    const Streamed s = stream_epoch(loader, 1, 5);
    EXPECT_EQ(s.samples.size(), 3u);
    for (const auto& [index, sample] : s.samples) EXPECT_EQ(sample, index == 0 ? good : other);
    EXPECT_EQ(loader.stats().skipped, 4);
    EXPECT_EQ(loader.stats().corrupt, 4);
    EXPECT_EQ(loader.batches_per_epoch(2), 2);  // 3 good samples in batches of 2, the last kept

    LoaderOptions strict = streaming(2, 2);
    strict.strict = true;
    strict.shuffle = false;
    Loader stopping(source, strict);
    EXPECT_NE(epoch_error<CorruptSampleError>(stopping).find("record '00000002' is damaged: "
                                                             "feature 1 is nan"),
              std::string::npos);
    // The in-memory reading is the same decoding: it stops at the first damaged record.
    expect_error<DataError>([&] { read_interactions(dir.file("db"), {}); },
                            "record '00000002' is damaged");
    // Each skipped record, one shard of one sample each, with why; a stray image by its kind.
    std::vector<std::string> messages;
    for (std::int64_t i = 0; i < source->size(); ++i) {
        LoaderOptions one = strict;
        one.shuffle = false;
        one.batch = 1;
        one.shard_count = int(source->size());
        one.shard_index = int(i);
        Loader single(source, one);
        single.start_epoch(1);
        try {
            while (single.next()) {
            }
        } catch (const CorruptSampleError& e) {
            messages.push_back(e.what());
        }
    }
    ASSERT_EQ(messages.size(), 4u);
    EXPECT_NE(messages[1].find("is truncated"), std::string::npos) << messages[1];
    EXPECT_NE(messages[2].find("record '00000004' is a png image among interaction examples"),
              std::string::npos)
        << messages[2];
    EXPECT_NE(messages[3].find("item 2 is 2.5, not a stored item id"), std::string::npos)
        << messages[3];
}

// `tandem mkdb --check` on an interaction database: each record decoded as the loader decodes
// it; the damaged ones and the image among them are named, the good ones pass.
TEST(LoaderInteractions, CheckingADatabaseNamesTheRecordsTheLoaderWouldSkip) {
    TempDir dir;
    const std::vector<float> good{0, 3, 4, 0.5f, -1};
    std::vector<float> nan_feature = good;
    nan_feature[4] = std::numeric_limits<float>::quiet_NaN();
    write_records(dir.file("db"),
                  {interaction_record(good, 3, 0), interaction_record(nan_feature, 3, 1),
                   encode_image_record(pattern_image(0, 4, 4, 1), 0, Encoding::png, 95),
                   interaction_record(good, 3, 2)});
    const auto problems = check_db(dir.file("db"), 2);
    ASSERT_EQ(problems.size(), 2u);
    EXPECT_NE(problems[0].find("record '00000001' is damaged: feature 1 is nan"), std::string::npos)
        << problems[0];
    EXPECT_NE(problems[1].find("'00000002'"), std::string::npos) << problems[1];

    const InteractionDb clean(20);
    EXPECT_TRUE(check_db(clean.path, 2).empty());
}

TEST(LoaderInteractions, AnImageDatabaseSkipsAStrayInteractionRecord) {
    TempDir dir;
    std::vector<std::string> records;
    for (int i = 0; i < 5; ++i)
        records.push_back(encode_image_record(pattern_image(i, 4, 4, 3), i % 2, Encoding::raw, 95));
    records.insert(records.begin() + 2, interaction_record({1, 2, 0.5f}, 2, 1));
    write_records(dir.file("db"), records);
    auto source = std::make_shared<LmdbSource>(dir.file("db"));
    ASSERT_EQ(source->sample_kind(), SampleKind::image);
    Loader loader(source, streaming(2, 2));
    loader.start_epoch(1);
    std::int64_t images = 0;
    while (auto b = loader.next()) {
        EXPECT_EQ(b->images.shape(), Shape({b->count, 3, 4, 4}));
        images += b->count;
    }
    EXPECT_EQ(images, 5);
    EXPECT_EQ(loader.stats().corrupt, 1);
}

TEST(LoaderInteractions, ImageTransformsAndASecondShapeAreRefusedByName) {
    const InteractionDb db(10);
    auto source = std::make_shared<LmdbSource>(db.path);
    for (const char* option : {"flip", "crop", "mean"}) {
        LoaderOptions o = streaming(1);
        if (std::strcmp(option, "flip") == 0) o.transform.flip = true;
        if (std::strcmp(option, "crop") == 0) o.transform.crop_height = o.transform.crop_width = 2;
        if (std::strcmp(option, "mean") == 0) o.transform.mean = {0.5f};
        try {
            Loader loader(source, o);
            ADD_FAILURE() << option << " was taken";
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find("transforms option '" + std::string(option) +
                                                 "' is for images"),
                      std::string::npos)
                << e.what();
        }
    }
    // 3 items + 2 features and 2 + 3 have one width: the loader still tells them apart.
    TempDir dir;
    write_records(dir.file("db"), {interaction_record({1, 2, 3, 0, 1}, 3, 0),
                                   interaction_record({1, 2, 0, 1, 1}, 2, 1)});
    LoaderOptions o = streaming(1, 2);
    o.shuffle = false;
    Loader loader(std::make_shared<LmdbSource>(dir.file("db")), o);
    EXPECT_NE(epoch_error<DataError>(loader).find("record '00000001' holds 2 items and 3 features, "
                                                  "the epoch's first record 3 and 2"),
              std::string::npos);
}

}  // namespace
}  // namespace tandem::test
