// What a Loader is asked for (LoaderOptions) and what it hands out (Batch), apart from the
// loader itself so that the stages it is made of (batch_slab.h) can share them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

}  // namespace tandem
