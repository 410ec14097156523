#include "parallel/buckets.h"

#include "base/error.h"
#include "device/device.h"
#include "kernels/kernel_cache.h"

namespace tandem {

std::vector<std::vector<std::size_t>> bucket_groups(const std::vector<std::size_t>& bytes,
                                                    std::size_t bucket_bytes) {
    std::vector<std::vector<std::size_t>> groups;
    std::size_t used = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        if (groups.empty() || (used > 0 && used + bytes[i] > bucket_bytes)) {
            groups.emplace_back();
            used = 0;
        }
        groups.back().push_back(i);
        used += bytes[i];
    }
    return groups;
}

GradientBuckets::GradientBuckets(std::vector<std::pair<std::string, Tensor>> grads,
                                 std::size_t bucket_bytes)
    : grads_(std::move(grads)) {
    TANDEM_CHECK_AS(ConfigError, bucket_bytes > 0)
        << "gradient buckets: bucket size must be positive";
    Device* device = nullptr;
    for (const auto& [name, grad] : grads_) {
        TANDEM_CHECK_AS(ConfigError, grad.defined())
            << "gradient buckets: '" << name << "' has no gradient";
        TANDEM_CHECK_AS(ConfigError, grad.dtype() == DType::f32)
            << "gradient buckets: '" << name << "' is " << grad.description() << ", f32 expected";
        if (!device) device = &grad.device();
        TANDEM_CHECK_AS(ConfigError, &grad.device() == device)
            << "gradient buckets: '" << name << "' is on " << grad.device().name()
            << ", the first on " << device->name() << "; a bucket list belongs to one device";
    }

    std::vector<std::size_t> bytes;
    for (const auto& g : grads_) bytes.push_back(g.second.nbytes());
    for (auto& members : bucket_groups(bytes, bucket_bytes)) {
        Bucket bucket;
        std::size_t elements = 0;
        for (std::size_t i : members) {
            bucket.offsets.push_back(elements);
            elements += static_cast<std::size_t>(grads_[i].second.numel());
        }
        bucket.members = std::move(members);
        bucket.flat = Tensor::empty(Shape{static_cast<std::int64_t>(elements)}, *device);
        buckets_.push_back(std::move(bucket));
    }
}

const GradientBuckets::Bucket& GradientBuckets::bucket(std::size_t index) const {
    TANDEM_CHECK_AS(ConfigError, index < buckets_.size())
        << "gradient bucket " << index << " out of range (" << buckets_.size() << " buckets)";
    return buckets_[index];
}

std::size_t GradientBuckets::complete_buckets(std::size_t final_gradients) const {
    std::size_t n = 0;
    while (n < buckets_.size() && buckets_[n].members.back() < final_gradients) ++n;
    return n;
}

void GradientBuckets::pack(std::size_t index) {
    const Bucket& b = bucket(index);
    float* flat = static_cast<float*>(b.flat.raw());
    for (std::size_t k = 0; k < b.members.size(); ++k) {
        const Tensor& grad = grads_[b.members[k]].second;
        grad.device().copy_within(flat + b.offsets[k], grad.raw(), grad.nbytes());
    }
}

void GradientBuckets::unpack(std::size_t index, float scale) {
    Bucket& b = buckets_.at(index);
    if (scale != 1.0f) tensor_ops(b.flat.device()).scale(b.flat, scale);
    const float* flat = static_cast<const float*>(b.flat.raw());
    for (std::size_t k = 0; k < b.members.size(); ++k) {
        const Tensor& grad = grads_[b.members[k]].second;
        grad.device().copy_within(grad.raw(), flat + b.offsets[k], grad.nbytes());
    }
}

void GradientBuckets::all_reduce(std::size_t index, Communicator& comm, int rank,
                                 ReduceAlgorithm algorithm, float scale) {
    pack(index);
    const Bucket& b = buckets_[index];
    // Device memory: the in-process communicator reads it as host memory (CPU devices), NCCL
    // as GPU memory.
    comm.all_reduce_sum(rank, static_cast<float*>(b.flat.raw()),
                        static_cast<std::size_t>(b.flat.numel()), algorithm);
    unpack(index, scale);
}

void GradientBuckets::all_reduce_all(Communicator& comm, int rank, ReduceAlgorithm algorithm,
                                     float scale) {
    for (std::size_t i = 0; i < buckets_.size(); ++i) all_reduce(i, comm, rank, algorithm, scale);
}

}  // namespace tandem
