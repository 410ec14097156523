// Loader: the three-stage image pipeline (issue 3; ARCHITECTURE idea 7). While batch i is
// computed, batch i+1 is decoded and augmented and batch i+2 is read:
//
//   reader thread ──read queue──▶ decode threads ──done queue──▶ assembly thread ──batch queue──▶
//   next() (source, epoch order)         (ImageTransform)               (in order, into device
//   memory)
//
// Each epoch visits a fresh permutation (epoch_order(size, seed, epoch)); with shard_count > 1
// the loader sees only positions shard_index, shard_index + shard_count, ... of it, so the
// shards of an epoch partition it: every sample reaches exactly one shard. The assembly stage
// puts samples back in epoch order, so batches are the same whatever the number of decode
// threads, and random augmentation comes from rng_key(seed, epoch, sample index).
//
// Ending: the end of an epoch flows downstream through closed queues; close() (or starting
// another epoch early, or destroying the loader) cancels every queue and joins every thread;
// an error in any stage cancels the rest and is rethrown by next() on the consumer's thread.
// A corrupt sample is skipped with a warning naming its key and counted (strict: an error).
//
// Threads: start_epoch, next, close and stats belong to one consumer thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "data/bounded_queue.h"
#include "data/data_source.h"
#include "data/loader_stats.h"
#include "data/transform.h"
#include "tensor/tensor.h"

namespace tandem {

class Device;

enum class LastBatch { drop, keep, pad };
// "drop", "keep", "pad"; ConfigError listing them for anything else.
LastBatch parse_last_batch(const std::string& name);

struct LoaderOptions {
    std::int64_t batch = 32;
    int threads = 2;  // decode/augment threads
    TransformOptions transform;
    bool shuffle = true;
    std::uint64_t seed = 1;
    int shard_index = 0;
    int shard_count = 1;
    LastBatch last = LastBatch::drop;  // the epoch's last partial batch: dropped, smaller, or
                                       // filled up by repeating its first samples
    std::shared_ptr<Device> device;    // where batches are made; null: the host
    Layout layout = Layout::contiguous;
    bool strict = false;  // a corrupt sample is an error, not a skip
    int prefetch = 2;     // batches assembled ahead of the consumer
    bool quiet = false;   // no warnings on stderr for skipped samples
};

struct Batch {
    Tensor images;                      // B x C x H x W f32 on the device, in the layout
    Tensor labels;                      // B i32 on the device
    std::int64_t count = 0;             // real samples (B unless the last batch was padded)
    std::vector<std::int64_t> indices;  // source indices, in batch order
};

class Loader {
public:
    // ConfigError for a bad option (names it); DataError for an empty source or shard.
    Loader(DataSourcePtr source, LoaderOptions options);
    ~Loader();
    Loader(const Loader&) = delete;
    Loader& operator=(const Loader&) = delete;

    // Starts epoch `epoch` (any integer; it keys the permutation and augmentation), ending an
    // unfinished one first.
    void start_epoch(std::int64_t epoch);
    // The next batch of the epoch; nothing at its end (or when no epoch was started). Rethrows
    // the error of any stage, after every thread has ended.
    std::optional<Batch> next();
    // Ends every thread now; the loader may start another epoch afterwards.
    void close();

    LoaderStats stats() const;
    std::int64_t shard_size() const;
    // Batches of a full epoch of this shard (fewer when samples are skipped).
    std::int64_t batches_per_epoch() const;
    const DataSource& source() const { return *source_; }
    const LoaderOptions& options() const { return options_; }

private:
    struct Item;
    void read_stage(std::vector<std::int64_t> order);
    void decode_stage();
    void assemble_stage();
    // Records the first error, then cancels every queue so all stages end.
    void fail(std::exception_ptr error);
    void cancel_all();
    void join_all();

    DataSourcePtr source_;
    LoaderOptions options_;
    ImageTransform transform_;
    Device* device_;

    // Per epoch.
    std::int64_t epoch_ = 0;
    std::unique_ptr<BoundedQueue<std::unique_ptr<Item>>> read_queue_;
    std::unique_ptr<BoundedQueue<std::unique_ptr<Item>>> done_queue_;
    std::unique_ptr<BoundedQueue<Batch>> batch_queue_;
    std::vector<std::thread> threads_;
    std::atomic<int> decoders_left_{0};
    // The reader stays within `window_` positions of what the assembler has taken, which bounds
    // the assembler's reorder buffer.
    std::mutex window_mutex_;
    std::condition_variable window_cv_;
    std::int64_t taken_ = 0;
    std::int64_t window_ = 0;
    bool stopping_ = false;
    std::mutex error_mutex_;
    std::exception_ptr error_;
    bool first_batch_ = true;
    double last_return_ = 0;

    // Statistics, written by the stages.
    std::atomic<std::int64_t> records_read_{0}, read_ns_{0}, images_decoded_{0}, decode_ns_{0};
    std::atomic<std::int64_t> batches_assembled_{0}, assemble_ns_{0}, skipped_{0};
    LoaderStats consumer_;  // the consumer's own counts (batches, waits)
};

}  // namespace tandem
