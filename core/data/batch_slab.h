// Batch slabs: where the loader's decode threads write samples, and how slabs become batches
// (issue 3). The shard's epoch sequence is cut into chunks of `batch` positions; each chunk has
// a slab, memory for a whole batch, and the decode thread that transforms the sample at
// position p writes it straight into slot p % batch of chunk p / batch. There is no per-sample
// buffer and no copy: when every sample of a chunk is good, its slab is the batch.
//
// A corrupt sample leaves a hole. The assembler takes slabs in epoch order and, from the first
// hole on, packs the good samples of the rest of the epoch into fresh batches, one copy per
// sample, so batches still hold consecutive good samples in epoch order whatever the thread
// count. Clean epochs (the usual case) copy nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/corrupt_samples.h"
#include "data/loader_options.h"
#include "tensor/tensor.h"

namespace tandem {

class Device;

// What a decode thread learnt of the sample at one position.
struct SlotRecord {
    std::int64_t index = -1;  // in the source
    std::string key;
    std::int32_t label = 0;
    std::string corrupt;  // why the sample cannot be used; empty when it can
    // Why the sample stops the epoch (a DataError the assembler raises in epoch order, as it
    // does for a shape that differs); empty when it does not.
    std::string error;
    Shape shape;  // after its transforms; written into the slab only when it fits
};

class BatchSlab {
public:
    // Positions [chunk * batch, chunk * batch + count) of the epoch; `sample` is the shape every
    // sample must have (empty when none decoded: the slab then has no pixel memory). The
    // memory is a batch tensor on `device` when the host can write it, else in the device's
    // pinned host memory (Device::pinned_host), else in plain host memory.
    BatchSlab(std::int64_t chunk, std::int64_t count, std::int64_t batch, const Shape& sample,
              Device& device, Layout layout);

    std::int64_t chunk() const { return chunk_; }
    std::int64_t count() const { return std::int64_t(slots_.size()); }
    const Shape& sample_shape() const { return sample_; }
    SlotRecord& slot(std::int64_t i) { return slots_[std::size_t(i)]; }
    float* pixels(std::int64_t i);
    Tensor& images() { return images_; }
    bool fits(const SlotRecord& s) const { return sample_.rank() == 3 && s.shape == sample_; }

    // A decode thread is done with one slot; true for the call that finishes the slab. Every
    // slot's writes happen before the finishing call returns true.
    bool finish_slot() { return remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1; }

private:
    std::int64_t chunk_;
    Shape sample_;
    std::int64_t per_sample_;
    Tensor images_;  // batch x sample
    std::vector<SlotRecord> slots_;
    std::atomic<std::int64_t> remaining_;
};

// Turns finished slabs, taken in epoch order, into batches on the loader's device.
class BatchAssembler {
public:
    // `emit` hands a batch on; false when the consumer has gone (the loader is closing).
    using Emit = std::function<bool(Batch)>;

    BatchAssembler(const LoaderOptions& options, Device& device, std::int64_t classes,
                   std::atomic<std::int64_t>& skipped, CorruptSamples& corrupt, Emit emit);

    // The next slab in epoch order. Corrupt samples are skipped, with a warning the first time
    // each is met (an error when strict); a slot's error, a sample of another shape or a label
    // out of range is a DataError naming it.
    // False when emit did.
    bool add(BatchSlab& slab);
    // The end of the epoch: the partial batch left, by options.last. False when emit did.
    bool finish();

private:
    // True when the sample goes into a batch, false when it is skipped; throws otherwise.
    bool check(const SlotRecord& s, const BatchSlab& slab);
    // Moves `count` samples of host-writable `images` (batch rows) to the device as a batch.
    bool ship(Tensor images, std::vector<std::int64_t> indices, std::vector<std::int32_t> labels,
              std::int64_t count);

    const LoaderOptions& options_;
    Device& device_;
    std::int64_t classes_;
    std::atomic<std::int64_t>& skipped_;  // the loader's count of samples skipped this epoch
    CorruptSamples& corrupt_;             // every corrupt sample the loader has met
    Emit emit_;
    // The batch being packed once the epoch has a hole (host-writable, like a slab).
    Tensor packing_;
    std::vector<std::int64_t> packed_indices_;
    std::vector<std::int32_t> packed_labels_;
};

}  // namespace tandem
