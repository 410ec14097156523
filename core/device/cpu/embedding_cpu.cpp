// Embedding lookups on the CPU: row copies forward, row sums backward (one thread: the sums
// into a shared table would race, and the rows are short).
#include <cmath>
#include <cstring>

#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

class EmbeddingCpu final : public EmbeddingKernel {
public:
    explicit EmbeddingCpu(const EmbeddingConfig& c) : c_(c) {}

    void forward(const Tensor& indices, const Tensor& weights, Tensor& dst) override {
        const float* ids = indices.data<float>();
        const float* table = weights.data<float>();
        float* out = dst.data<float>();
        for (std::int64_t i = 0; i < c_.count; ++i) {
            const std::int64_t row = checked(ids[i], i);
            std::memcpy(out + i * c_.dim, table + row * c_.dim,
                        static_cast<std::size_t>(c_.dim) * sizeof(float));
        }
    }

    void backward(const Tensor& indices, const Tensor& diff_dst, Tensor& diff_weights) override {
        const float* ids = indices.data<float>();
        const float* dy = diff_dst.data<float>();
        float* table = diff_weights.data<float>();
        for (std::int64_t i = 0; i < c_.count; ++i) {
            float* row = table + checked(ids[i], i) * c_.dim;
            for (std::int64_t j = 0; j < c_.dim; ++j) row[j] += dy[i * c_.dim + j];
        }
    }

private:
    std::int64_t checked(float id, std::int64_t i) const {
        TANDEM_CHECK_AS(DataError,
                        id >= 0 && id < static_cast<float>(c_.rows) && std::floor(id) == id)
            << "Embedding: index " << i + 1 << " is " << id << ", not a whole number in [0, "
            << c_.rows << ")";
        return static_cast<std::int64_t>(id);
    }

    EmbeddingConfig c_;
};

}  // namespace

std::unique_ptr<EmbeddingKernel> make_embedding_cpu(Device&, const EmbeddingConfig& c) {
    return std::make_unique<EmbeddingCpu>(c);
}

}  // namespace tandem::cpu
