#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "base/rng.h"
#include "data/dataset.h"
#include "data/file_list_source.h"
#include "data/lmdb_source.h"
#include "data/loader.h"
#include "data_fixtures.h"
#include "device/cpu/cpu_device.h"
#include "support/stand_in_gpu.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

struct Db {
    TempDir dir;
    std::shared_ptr<LmdbSource> source;
    explicit Db(int n, int classes = 5, Encoding e = Encoding::png) {
        write_pattern_db(dir.file("db"), n, classes, 10, 12, 3, e);
        source = std::make_shared<LmdbSource>(dir.file("db"));
    }
};

LoaderOptions augmenting(int threads) {
    LoaderOptions o;
    o.batch = 8;
    o.threads = threads;
    o.seed = 9;
    o.transform.crop_height = o.transform.crop_width = 8;
    o.transform.random_crop = true;
    o.transform.pad = 2;
    o.transform.flip = true;
    o.transform.brightness = o.transform.contrast = o.transform.saturation = 0.3f;
    o.quiet = true;
    return o;
}

// Every batch of an epoch: (images as values, labels, indices).
struct Epoch {
    std::vector<std::vector<float>> images;
    std::vector<std::vector<float>> labels;
    std::vector<std::int64_t> indices;
    std::vector<std::int64_t> counts;
};

Epoch run_epoch(Loader& loader, std::int64_t epoch) {
    Epoch e;
    loader.start_epoch(epoch);
    while (auto b = loader.next()) {
        e.images.push_back(b->images.to_vector());
        const int* l = b->labels.data<int>();
        e.labels.emplace_back(l, l + b->labels.numel());
        e.indices.insert(e.indices.end(), b->indices.begin(), b->indices.begin() + b->count);
        e.counts.push_back(b->count);
    }
    return e;
}

// The message of the `E` thrown while reading epoch `epoch` to its end; a test failure (and
// "") when the epoch ends without one.
template <class E>
std::string epoch_error(Loader& loader, std::int64_t epoch) {
    loader.start_epoch(epoch);
    try {
        while (loader.next()) {
        }
    } catch (const E& e) {
        return e.what();
    }
    ADD_FAILURE() << "the epoch ended without an error";
    return "";
}

TEST(Loader, SameBatchesWhateverTheThreadCount) {
    Db db(45);
    Loader one(db.source, augmenting(1)), four(db.source, augmenting(4));
    const Epoch a = run_epoch(one, 3), b = run_epoch(four, 3);
    ASSERT_EQ(a.images.size(), 5u);  // 45 / 8, last dropped
    EXPECT_EQ(a.indices, b.indices);
    EXPECT_EQ(a.labels, b.labels);
    EXPECT_EQ(a.images, b.images);
    const Epoch c = run_epoch(one, 4);
    EXPECT_NE(a.indices, c.indices) << "a fresh permutation each epoch";
    EXPECT_EQ(run_epoch(one, 3).images, a.images) << "an epoch again is the same";
    for (std::size_t i = 0; i < a.indices.size(); ++i)
        EXPECT_EQ(a.labels[i / 8][i % 8], float(db.source->label(a.indices[i])));
}

TEST(Loader, ShardsPartitionEveryEpoch) {
    Db db(50);
    for (const std::int64_t epoch : {1, 2}) {
        std::multiset<std::int64_t> seen;
        for (int shard = 0; shard < 3; ++shard) {
            LoaderOptions o = augmenting(2);
            o.shard_index = shard;
            o.shard_count = 3;
            o.last = LastBatch::keep;
            Loader loader(db.source, o);
            EXPECT_EQ(loader.shard_size(), shard < 2 ? 17 : 16);
            const Epoch e = run_epoch(loader, epoch);
            EXPECT_EQ(std::int64_t(e.counts.size()), loader.batches_per_epoch());
            seen.insert(e.indices.begin(), e.indices.end());
        }
        ASSERT_EQ(seen.size(), 50u);
        for (std::int64_t i = 0; i < 50; ++i) EXPECT_EQ(seen.count(i), 1u) << "sample " << i;
    }
}

TEST(Loader, LastPartialBatchDropKeepPad) {
    Db db(19);
    LoaderOptions o = augmenting(2);
    o.last = LastBatch::drop;
    EXPECT_EQ(run_epoch(*std::make_unique<Loader>(db.source, o), 1).counts,
              (std::vector<std::int64_t>{8, 8}));
    o.last = LastBatch::keep;
    Loader keep(db.source, o);
    Epoch e = run_epoch(keep, 1);
    EXPECT_EQ(e.counts, (std::vector<std::int64_t>{8, 8, 3}));
    EXPECT_EQ(e.labels[2].size(), 3u);
    EXPECT_EQ(e.images[2].size(), 3u * 3 * 8 * 8);
    o.last = LastBatch::pad;
    Loader pad(db.source, o);
    e = run_epoch(pad, 1);
    EXPECT_EQ(e.counts, (std::vector<std::int64_t>{8, 8, 3}));
    ASSERT_EQ(e.labels[2].size(), 8u);
    EXPECT_EQ(e.labels[2][3], e.labels[2][0]);
    const std::size_t per = 3 * 8 * 8;
    EXPECT_TRUE(std::equal(e.images[2].begin() + 5 * per, e.images[2].begin() + 6 * per,
                           e.images[2].begin() + 2 * per));
}

TEST(Loader, WritesIntoTheDeviceInItsLayout) {
    Db db(16);
    auto device = std::make_shared<CpuDevice>(0, CpuDeviceOptions{std::size_t(64) << 20, 1});
    LoaderOptions o = augmenting(2);
    o.device = device;
    o.layout = Layout::channels_last;
    Loader nhwc(db.source, o);
    nhwc.start_epoch(1);
    auto b = nhwc.next();
    ASSERT_TRUE(b);
    EXPECT_EQ(&b->images.device(), device.get());
    EXPECT_EQ(b->images.layout(), Layout::channels_last);
    EXPECT_EQ(b->images.shape(), (Shape{8, 3, 8, 8}));
    EXPECT_EQ(b->labels.dtype(), DType::i32);
    o.layout = Layout::contiguous;
    Loader nchw(db.source, o);
    nchw.start_epoch(1);
    auto c = nchw.next();
    EXPECT_EQ(b->images.to_vector(), c->images.to_vector()) << "the same values in either layout";
}

TEST(Loader, CorruptAndTruncatedRecordsAreSkippedAndCounted) {
    TempDir dir;
    std::vector<std::string> records;
    for (int i = 0; i < 20; ++i)
        records.push_back(
            encode_image_record(pattern_image(i, 10, 12, 3), i % 4, Encoding::jpeg, 90));
    records[3] = records[3].substr(0, records[3].size() - 50);  // truncated record
    records[7].replace(kRecordHeaderSize + 2, 60, 60, '\x01');  // undecodable JPEG
    records[11] = "TDRC short";                                 // damaged header
    RecordHeader h{Encoding::jpeg, 1, 10, 12, 3};               // JPEG cut short,
    const std::string& full = records[12];                      // header re-made to fit
    const std::string cut = full.substr(kRecordHeaderSize, (full.size() - kRecordHeaderSize) / 2);
    records[12] =
        encode_record(h, {reinterpret_cast<const unsigned char*>(cut.data()), cut.size()});
    write_records(dir.file("db"), records);
    auto source = std::make_shared<LmdbSource>(dir.file("db"));
    EXPECT_EQ(source->damaged(), 2);
    LoaderOptions o = augmenting(3);
    o.last = LastBatch::keep;
    Loader loader(source, o);
    const Epoch e = run_epoch(loader, 1);
    EXPECT_EQ(e.indices.size(), 16u);
    for (std::int64_t bad : {3, 7, 11, 12})
        EXPECT_EQ(std::count(e.indices.begin(), e.indices.end(), bad), 0) << bad;
    EXPECT_EQ(loader.stats().skipped, 4);

    o.strict = true;
    Loader strict(source, o);
    const std::string message = epoch_error<CorruptSampleError>(strict, 1);
    EXPECT_NE(message.find("(strict: corrupt samples are errors)"), std::string::npos) << message;
    EXPECT_NE(message.find("'000000"), std::string::npos) << message;  // names the key
}

// The pixels the loader must give sample `index` in `epoch`: its transform, alone.
std::vector<float> transformed(const DataSource& source, const LoaderOptions& o, std::int64_t epoch,
                               std::int64_t index) {
    std::vector<float> out;
    ImageTransform(o.transform)
        .apply(source.open_reader()->read(index),
               rng_key(rng_key(o.seed, std::uint64_t(epoch)), std::uint64_t(index)), o.layout, out);
    return out;
}

// 30 JPEG records, `bad` of them damaged so that they do not decode.
std::shared_ptr<LmdbSource> db_with_damage(TempDir& dir, const std::set<int>& bad) {
    std::vector<std::string> records;
    for (int i = 0; i < 30; ++i) {
        records.push_back(
            encode_image_record(pattern_image(i, 10, 12, 3), i % 4, Encoding::jpeg, 90));
        if (bad.count(i)) records[std::size_t(i)].replace(kRecordHeaderSize + 2, 60, 60, '\x01');
    }
    write_records(dir.file("db"), records);
    return std::make_shared<LmdbSource>(dir.file("db"));
}

TEST(Loader, AfterASkippedSampleBatchesHoldTheNextGoodOnes) {
    TempDir dir;
    const std::set<int> bad{5, 17};
    auto source = db_with_damage(dir, bad);
    // The good samples of the epoch, in its order: what the batches must hold, eight at a time.
    std::vector<std::int64_t> good;
    for (std::int64_t i : epoch_order(30, 9, 2, true))
        if (!bad.count(int(i))) good.push_back(i);
    for (const LastBatch last : {LastBatch::keep, LastBatch::pad}) {
        for (const int threads : {1, 3}) {
            LoaderOptions o = augmenting(threads);
            o.last = last;
            Loader loader(source, o);
            const Epoch e = run_epoch(loader, 2);
            EXPECT_EQ(e.counts, (std::vector<std::int64_t>{8, 8, 8, 4}));
            ASSERT_EQ(e.indices, good) << "threads " << threads;
            EXPECT_EQ(loader.stats().skipped, 2);
            const std::size_t per_sample = 3 * 8 * 8;
            for (std::size_t n = 0; n < good.size(); ++n) {
                const std::vector<float>& batch = e.images[n / 8];
                const std::vector<float> row(batch.begin() + (n % 8) * per_sample,
                                             batch.begin() + (n % 8 + 1) * per_sample);
                EXPECT_EQ(row, transformed(*source, o, 2, good[n])) << "sample " << good[n];
                EXPECT_EQ(e.labels[n / 8][n % 8], float(source->label(good[n])));
            }
            if (last == LastBatch::pad) {  // the last batch topped up with its first samples
                ASSERT_EQ(e.images[3].size(), 8 * per_sample);
                EXPECT_TRUE(std::equal(e.images[3].begin() + 4 * per_sample, e.images[3].end(),
                                       e.images[3].begin()));
            }
        }
    }
}

TEST(Loader, AnEpochOfCorruptSamplesHasNoBatches) {
    TempDir dir;
    std::set<int> all;
    for (int i = 0; i < 30; ++i) all.insert(i);
    LoaderOptions o = augmenting(2);
    o.last = LastBatch::keep;
    Loader loader(db_with_damage(dir, all), o);
    EXPECT_TRUE(run_epoch(loader, 1).counts.empty());
    EXPECT_EQ(loader.stats().skipped, 30);
}

TEST(Loader, AnImageOfAnotherShapeIsAnErrorNamingTheFirst) {
    // Without a crop, images keep their size: every fifth is wider than the rest.
    TempDir dir;
    std::vector<std::string> records;
    for (int i = 0; i < 40; ++i)
        records.push_back(encode_image_record(pattern_image(i, 10, i % 5 == 3 ? 14 : 12, 3), 0,
                                              Encoding::png, 90));
    write_records(dir.file("db"), records);
    auto source = std::make_shared<LmdbSource>(dir.file("db"));
    const std::vector<std::int64_t> order = epoch_order(40, 9, 1, true);
    const bool first_wide = order[0] % 5 == 3;
    const auto odd_one = std::find_if(order.begin(), order.end(),
                                      [&](auto i) { return (i % 5 == 3) != first_wide; });
    for (const int threads : {1, 4}) {
        LoaderOptions o;
        o.batch = 4;
        o.threads = threads;
        o.seed = 9;
        Loader loader(source, o);
        const std::string message = epoch_error<DataError>(loader, 1);
        EXPECT_NE(message.find("image '" + source->key(*odd_one) + "' is 3x10x" +
                               (first_wide ? "12" : "14") + " after its transforms"),
                  std::string::npos)
            << message;
        EXPECT_NE(message.find("give a crop"), std::string::npos) << message;
    }
}

TEST(Loader, MemoryStaysBoundedOverALongEpoch) {
    // 80 batches. Alive at once: the slabs being decoded (the reader stays a batch and its
    // queue ahead of the assembler), the one being handed out, the prefetched ones and the
    // consumer's: 8 at most. A slab or batch kept after it was handed out grows the peak with
    // the epoch.
    Db db(640);
    auto device = std::make_shared<CpuDevice>(0, CpuDeviceOptions{std::size_t(64) << 20, 1});
    for (const int threads : {1, 4}) {
        LoaderOptions o = augmenting(threads);
        o.device = device;
        device->allocator().reset_peak();
        Loader loader(db.source, o);
        EXPECT_EQ(run_epoch(loader, 1).counts.size(), 80u);
        const std::size_t batch_bytes = 8 * 3 * 8 * 8 * sizeof(float) + 256;  // + labels
        EXPECT_LE(device->allocator().stats().peak, 8 * batch_bytes) << "threads " << threads;
    }
}

TEST(Loader, ADeviceTheHostCannotWriteGetsOneCopyPerBatchFromItsPinnedMemory) {
    Db db(19);
    LoaderOptions o = augmenting(2);
    o.last = LastBatch::keep;
    const Epoch on_host = run_epoch(*std::make_unique<Loader>(db.source, o), 1);
    auto gpu = std::make_shared<StandInGpu>(0);
    o.device = gpu;
    Loader loader(db.source, o);
    loader.start_epoch(1);
    std::size_t batches = 0, samples = 0;
    while (auto b = loader.next()) {
        EXPECT_EQ(&b->images.device(), gpu.get());
        EXPECT_EQ(&b->labels.device(), gpu.get());
        EXPECT_EQ(b->images.to_vector(), on_host.images[batches]);
        std::vector<std::int32_t> labels(std::size_t(b->labels.numel()));
        gpu->copy_to_host(labels.data(), b->labels.raw(), labels.size() * sizeof(std::int32_t));
        for (std::size_t j = 0; j < labels.size(); ++j)
            EXPECT_EQ(float(labels[j]), on_host.labels[batches][j]);
        ++batches;
        samples += std::size_t(b->count);
    }
    EXPECT_EQ(batches, 3u);
    const std::size_t per_sample = 3 * 8 * 8 * sizeof(float) + sizeof(std::int32_t);
    EXPECT_EQ(gpu->bytes_from_host.load(), samples * per_sample)
        << "each image and label crosses once";
    EXPECT_GE(gpu->pinned->allocator().stats().peak, 8 * 3 * 8 * 8 * sizeof(float))
        << "batches are prepared in the device's pinned host memory";
}

TEST(Loader, PastItsPinnedMemoryCapAGpuGetsBatchesFromPlainHostMemory) {
    Db db(40);
    LoaderOptions o = augmenting(2);
    const Epoch on_host = run_epoch(*std::make_unique<Loader>(db.source, o), 1);
    auto gpu = std::make_shared<StandInGpu>(0);
    const std::size_t batch_bytes = 8 * 3 * 8 * 8 * sizeof(float);
    gpu->pinned = std::make_shared<CpuDevice>(0, CpuDeviceOptions{batch_bytes, 1});  // one batch
    o.device = gpu;
    Loader loader(db.source, o);
    loader.start_epoch(1);
    std::size_t batches = 0;
    while (auto b = loader.next()) EXPECT_EQ(b->images.to_vector(), on_host.images[batches++]);
    EXPECT_EQ(batches, 5u);
    EXPECT_EQ(gpu->pinned->allocator().stats().peak, batch_bytes) << "pinned memory was used";
}

TEST(Loader, CloseMidEpochEndsEveryThread) {
    Db db(200, 5, Encoding::jpeg);
    for (int round = 0; round < 3; ++round) {
        LoaderOptions o = augmenting(3);
        o.batch = 4;
        Loader loader(db.source, o);
        loader.start_epoch(1);
        ASSERT_TRUE(loader.next());
        if (round == 0) loader.close();  // explicit close
        if (round == 1) {
            loader.start_epoch(2);  // a new epoch ends the old one
            EXPECT_TRUE(loader.next());
        }
        // round 2: the destructor ends it
    }
    Loader never(db.source, augmenting(2));
    never.start_epoch(1);  // started, never read
}

TEST(Loader, StageErrorsReachNext) {
    Db db(30);
    LoaderOptions o = augmenting(2);
    o.transform.crop_height = o.transform.crop_width = 40;  // larger than the 10x12 images
    o.transform.pad = 0;
    Loader loader(db.source, o);
    const std::string crop = epoch_error<DataError>(loader, 1);
    EXPECT_NE(crop.find("smaller than the 40x40 crop"), std::string::npos) << crop;
    EXPECT_FALSE(loader.next()) << "after the error, the epoch is over";

    // A file removed after the folder was listed: the reader's error.
    TempDir dir;
    for (int i = 0; i < 12; ++i) {
        std::filesystem::create_directories(dir.file("c"));
        cv::imwrite(dir.file("c/" + std::to_string(i) + ".png"), pattern_image(i, 10, 10, 3));
    }
    auto folder = folder_source(dir.path().string());
    std::filesystem::remove(dir.file("c/5.png"));
    Loader files(folder, augmenting(2));
    const std::string gone = epoch_error<DataError>(files, 1);
    EXPECT_NE(gone.find("cannot open image " + dir.file("c/5.png")), std::string::npos) << gone;
}

TEST(Loader, OptionsAndEmptyShards) {
    Db db(2);
    LoaderOptions o;
    o.batch = 0;
    EXPECT_THROW(Loader(db.source, o), ConfigError);
    o = {};
    o.shard_index = 3;
    o.shard_count = 3;
    EXPECT_THROW(Loader(db.source, o), ConfigError);
    o.shard_index = 2;
    try {
        Loader loader(db.source, o);  // 2 samples, 3 shards: the third is empty
        ADD_FAILURE() << "an empty shard was taken";
    } catch (const DataError& e) {
        // Shards are counted as people count them, whatever the API's index.
        EXPECT_NE(std::string(e.what()).find("shard 3 of 3 of"), std::string::npos) << e.what();
    }
    EXPECT_THROW(parse_last_batch("round"), ConfigError);
}

TEST(Loader, StatsCountEveryStage) {
    Db db(32);
    Loader loader(db.source, augmenting(2));
    run_epoch(loader, 1);
    const LoaderStats s = loader.stats();
    EXPECT_EQ(s.batches, 4);
    EXPECT_EQ(s.records_read, 32);
    EXPECT_EQ(s.images_decoded, 32);
    EXPECT_EQ(s.batches_assembled, 4);
    EXPECT_GT(s.decode_rate(), 0);
    EXPECT_GT(s.read_rate(), 0);
    EXPECT_GE(s.wait_seconds, s.warm_wait_seconds);
    EXPECT_GT(s.warm_seconds, 0);
}

}  // namespace
}  // namespace tandem::test
