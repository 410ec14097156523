// Loader: the three-stage image pipeline (issue 3; ARCHITECTURE idea 7). While batch i is
// computed, batch i+1 is decoded and augmented and batch i+2 is read:
//
//   reader thread ──read queue──▶ decode threads ──done queue──▶ assembly thread ──batch queue──▶
//   next() (source, epoch order)        (ImageTransform, each    (finished slabs, in order)
//                                       sample straight into
//                                       its slab's batch memory)
//
// The decode threads write every sample into its place in the memory of its batch (a slab,
// batch_slab.h: on the device itself when the host can write it), so a clean epoch's samples
// are written once and never copied; the assembler only puts finished slabs in order.
//
// Each epoch visits a fresh permutation (epoch_order(size, seed, epoch)); with shard_count > 1
// the loader sees only positions shard_index, shard_index + shard_count, ... of it, so the
// shards of an epoch partition it: every sample reaches exactly one shard. A sample's place in
// its batch follows from its position alone, so batches are the same whatever the number of
// decode threads, and random augmentation comes from rng_key(seed, epoch, sample index).
// Every sample must have the shape of the epoch's first one that decodes.
//
// Ending: the end of an epoch flows downstream through closed queues; close() (or starting
// another epoch early, or destroying the loader) cancels every queue and joins every thread;
// an error in any stage cancels the rest and is rethrown by next() on the consumer's thread.
// A corrupt sample is skipped and counted, with a warning naming its key the first time (strict:
// an error).
//
// Interaction records (issue 18; a source whose sample_kind() is interaction: an LMDB database
// from `tandem import-interactions`) go through the same stages, threads, shards and batches,
// but a decode thread copies each record's payload into its slot (decode_interaction, the
// reading T.data.interactions shares) instead of decoding an image: samples are 1 x 1 x (L + F)
// floats. The transforms are about images and are refused for them, naming the option. A record
// of the other kind (an image among interaction records, or the reverse) is skipped and counted
// as a corrupt one is; one of another L and F than the epoch's first is a DataError naming it.
//
// Threads: start_epoch, next, close and stats belong to one consumer thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "data/batch_slab.h"
#include "data/bounded_queue.h"
#include "data/data_source.h"
#include "data/loader_options.h"
#include "data/loader_stats.h"

namespace tandem {

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
    // This shard's samples of epoch `epoch`, in order (source indices).
    std::vector<std::int64_t> shard_order(std::int64_t epoch) const;
    // Batches of epoch `epoch` of this shard, leaving out the samples found corrupt so far (so
    // exact from the second epoch on; the first reads them all); by default the next epoch.
    std::int64_t batches_per_epoch(std::optional<std::int64_t> epoch = std::nullopt) const;
    const DataSource& source() const { return *source_; }
    const LoaderOptions& options() const { return options_; }

private:
    struct Item;
    using SlabPtr = std::shared_ptr<BatchSlab>;
    void read_stage(std::vector<std::int64_t> order);
    // The shape of the epoch's first sample that decodes: every sample must have it, and the
    // slabs are made for it before any sample is decoded into them.
    Shape probe_sample_shape(SourceReader& reader, const std::vector<std::int64_t>& order);
    void decode_stage();
    // One read sample into slot `i` of `slab`, by the source's kind.
    void decode_image_slot(const RawSample& sample, BatchSlab& slab, std::int64_t i,
                           std::uint64_t epoch_key);
    void decode_interaction_slot(const RawSample& sample, BatchSlab& slab, std::int64_t i);
    // The slab of the chunk holding `position`, made by the first decode thread that needs it.
    SlabPtr slab_for(std::int64_t position);
    void assemble_stage();
    // Records the first error, then cancels every queue so all stages end.
    void fail(std::exception_ptr error);
    void cancel_all();
    void join_all();

    DataSourcePtr source_;
    LoaderOptions options_;
    ImageTransform transform_;
    Device* device_;
    bool interactions_;  // the source holds interaction records, not images

    // Per epoch.
    std::int64_t epoch_ = 0;
    std::int64_t chunks_ = 0;  // slabs of the epoch: its positions in runs of `batch`
    Shape sample_shape_;       // set by the reader before it hands out its first item
    // With interaction records: the L and F of the epoch's first one (set with sample_shape_).
    std::uint32_t interaction_length_ = 0, interaction_features_ = 0;
    std::unique_ptr<BoundedQueue<std::unique_ptr<Item>>> read_queue_;
    std::unique_ptr<BoundedQueue<SlabPtr>> done_queue_;  // finished slabs, in any order
    std::unique_ptr<BoundedQueue<Batch>> batch_queue_;
    std::vector<std::thread> threads_;
    std::atomic<int> decoders_left_{0};
    std::mutex slabs_mutex_;
    std::map<std::int64_t, SlabPtr> open_slabs_;  // by chunk, while decode threads write them
    // The reader stays within `window_` positions of the first chunk the assembler has not
    // taken, which bounds the slabs alive at once.
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
    CorruptSamples corrupt_;
    LoaderStats consumer_;  // the consumer's own counts (batches, waits)
};

}  // namespace tandem
