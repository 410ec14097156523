// Embedding lookups on a GPU: one thread per output element (kernels.cu). Forward checks the
// indices on the device and reads back one flag, so a bad index is an error naming it, as on
// the CPU; backward adds rows with atomicAdd, or, on a device in deterministic mode, in the
// samples' order without atomics (embedding.cu), the same sums in the CPU's order.
#include <climits>

#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/kernels.cuh"
#include "device/cuda/kernels_cuda.h"

namespace tandem::cuda {
namespace {

class EmbeddingCuda final : public EmbeddingKernel {
public:
    EmbeddingCuda(Device& device, const EmbeddingConfig& c) : device_(as_cuda(device)), c_(c) {}

    void forward(const Tensor& indices, const Tensor& weights, Tensor& dst) override {
        const float* ids = float_ptr(indices, device_, c_.count, "Embedding indices");
        const float* table = float_ptr(weights, device_, c_.rows * c_.dim, "Embedding weights");
        float* out = float_ptr(dst, device_, c_.count * c_.dim, "Embedding dst");
        device_.activate();
        Tensor flag = Tensor::empty({2}, device_);  // one unsigned long long
        auto* bad = static_cast<unsigned long long*>(flag.raw());
        TANDEM_CUDA_CALL(
            cudaMemsetAsync(bad, 0xff, sizeof(unsigned long long), device_.compute_stream()));
        kernels::embedding_forward(ids, table, out, c_.count, c_.rows, c_.dim, bad,
                                   device_.compute_stream());
        check_launch("embedding_forward");
        unsigned long long first = 0;
        device_.copy_to_host(&first, bad, sizeof(first));
        if (first == ULLONG_MAX) return;
        float id = 0;
        device_.copy_to_host(&id, ids + (first - 1), sizeof(id));
        TANDEM_THROW(DataError) << "Embedding: index " << first << " is " << id
                                << ", not a whole number in [0, " << c_.rows << ")";
    }

    void backward(const Tensor& indices, const Tensor& diff_dst, Tensor& diff_weights) override {
        const float* ids = float_ptr(indices, device_, c_.count, "Embedding indices");
        const float* dy = float_ptr(diff_dst, device_, c_.count * c_.dim, "Embedding diff_dst");
        float* table = float_ptr(diff_weights, device_, c_.rows * c_.dim, "Embedding diff_weights");
        device_.activate();
        if (device_.deterministic()) {
            kernels::embedding_backward_ordered(ids, dy, table, c_.count, c_.rows, c_.dim,
                                                device_.compute_stream());
            check_launch("embedding_backward_ordered");
        } else {
            kernels::embedding_backward(ids, dy, table, c_.count, c_.rows, c_.dim,
                                        device_.compute_stream());
            check_launch("embedding_backward");
        }
    }

private:
    CudaDevice& device_;
    EmbeddingConfig c_;
};

}  // namespace

std::unique_ptr<EmbeddingKernel> make_embedding_cuda(Device& device, const EmbeddingConfig& c) {
    return std::make_unique<EmbeddingCuda>(device, c);
}

}  // namespace tandem::cuda
