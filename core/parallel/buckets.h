// GradientBuckets: a stage's parameter gradients grouped into flat buffers for all-reduce.
//
// One collective per tensor would pay a barrier (or a network round trip) per parameter; one
// collective for everything could only start after the whole backward. Buckets, as in
// PyTorch's DDP, sit between: gradients are grouped in the order backward produces them (last
// layer first), each bucket up to `bucket_bytes` (a gradient larger than that gets a bucket of
// its own), so the engine can reduce the first bucket while backward still fills the later
// ones, and each reduction moves megabytes at a time.
//
// Each bucket owns a flat f32 buffer on the gradients' device (from its allocator, so it
// counts against the cap). Gradients are copied as raw bytes, in memory order, by the device
// (Device::copy_within: a memcpy on CPUs, a copy on a GPU's compute stream), so the replicas
// must hold their gradients in the same layouts (they do: same net, same binding), and the
// communicator gets device memory: the in-process one needs host-accessible devices, NCCL GPUs.
// Every replica must build its buckets from the same list so that bucket i matches across
// ranks. The class holds the gradient tensors (shared storage), not copies.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "parallel/communicator.h"
#include "tensor/tensor.h"

namespace tandem {

// The grouping GradientBuckets makes, for anyone who plans with it (the simulator): items of
// `bytes` each, in backward order, into consecutive groups closed when the next item would
// overflow `bucket_bytes` (an item larger than that gets a group of its own). Item indices.
std::vector<std::vector<std::size_t>> bucket_groups(const std::vector<std::size_t>& bytes,
                                                    std::size_t bucket_bytes);

class GradientBuckets {
public:
    static constexpr std::size_t default_bucket_bytes = std::size_t(25) << 20;  // as DDP

    // `grads`: (name, gradient) in backward order. Every gradient is f32 and all live on one
    // device; ConfigError naming the tensor otherwise.
    explicit GradientBuckets(std::vector<std::pair<std::string, Tensor>> grads,
                             std::size_t bucket_bytes = default_bucket_bytes);

    struct Bucket {
        std::vector<std::size_t> members;  // indices into the gradient list, in order
        std::vector<std::size_t> offsets;  // each member's first element in `flat`
        Tensor flat;                       // 1-D, the members' elements back to back
    };

    std::size_t size() const { return buckets_.size(); }
    const Bucket& bucket(std::size_t index) const;
    // How many leading buckets hold only gradients among the first `final_gradients` of the
    // list: those the engine may reduce while backward fills the rest.
    std::size_t complete_buckets(std::size_t final_gradients) const;
    // The gradients in the order given.
    const std::vector<std::pair<std::string, Tensor>>& grads() const { return grads_; }

    // Copies the bucket's gradients into its flat buffer.
    void pack(std::size_t index);
    // Copies the flat buffer back into the gradients, each element multiplied by `scale`
    // (1/replicas turns a sum into a mean).
    void unpack(std::size_t index, float scale = 1.0f);
    // pack, all_reduce_sum through `comm` as `rank`, unpack with `scale`: one bucket. Every
    // rank calls it for the same buckets in the same order.
    void all_reduce(std::size_t index, Communicator& comm, int rank, ReduceAlgorithm algorithm,
                    float scale = 1.0f);
    // Every bucket, in order.
    void all_reduce_all(Communicator& comm, int rank, ReduceAlgorithm algorithm,
                        float scale = 1.0f);

private:
    std::vector<std::pair<std::string, Tensor>> grads_;
    std::vector<Bucket> buckets_;
};

}  // namespace tandem
