// Dropout on the CPU: OpenMP loops over storage order. The mask is drawn by logical (NCHW)
// index, so for channels_last storage each element's logical index is recomputed from its
// storage index; masks are then identical across layouts and backends.
#include "base/rng.h"
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

class DropoutCpu final : public DropoutKernel {
public:
    explicit DropoutCpu(const DropoutConfig& config) : config_(config) {}

    void forward(const Tensor& src, float p, std::uint64_t key, std::uint64_t first, Tensor& mask,
                 Tensor& dst) override {
        check(src, "src");
        check(dst, "dst");
        TANDEM_CHECK_AS(ShapeError, mask.numel() == config_.numel && mask.dtype() == DType::u8 &&
                                        mask.layout() == src.layout() &&
                                        dst.layout() == src.layout())
            << "Dropout: mask " << mask.description() << " and dst " << dst.description()
            << " must be u8 / f32 in the layout of src " << src.description();
        const float* x = src.data<float>();
        float* y = dst.data<float>();
        unsigned char* m = mask.data<unsigned char>();
        const float keep_scale = 1.f / (1.f - p);
        const std::int64_t n = config_.numel;
        if (src.layout() == Layout::contiguous) {
#pragma omp parallel for if (n > kParallelMin)
            for (std::int64_t i = 0; i < n; ++i) {
                const bool kept = rng_uniform(key, first + static_cast<std::uint64_t>(i)) >= p;
                m[i] = kept;
                y[i] = kept ? x[i] * keep_scale : 0.f;
            }
            return;
        }
        // channels_last: storage is N x H x W x C; the logical index is ((n*C + c)*H + h)*W + w.
        const Shape& s = src.shape();
        const std::int64_t c_dim = s[1], h_dim = s[2], w_dim = s[3];
#pragma omp parallel for if (n > kParallelMin)
        for (std::int64_t i = 0; i < n; ++i) {
            const std::int64_t c = i % c_dim;
            std::int64_t rest = i / c_dim;
            const std::int64_t w = rest % w_dim;
            rest /= w_dim;
            const std::int64_t h = rest % h_dim;
            const std::int64_t b = rest / h_dim;
            const std::int64_t logical = ((b * c_dim + c) * h_dim + h) * w_dim + w;
            const bool kept = rng_uniform(key, first + static_cast<std::uint64_t>(logical)) >= p;
            m[i] = kept;
            y[i] = kept ? x[i] * keep_scale : 0.f;
        }
    }

    void backward(const Tensor& diff_dst, const Tensor& mask, float p, Tensor& diff_src) override {
        check(diff_dst, "diff_dst");
        check(diff_src, "diff_src");
        TANDEM_CHECK_AS(ShapeError, mask.numel() == config_.numel && mask.dtype() == DType::u8 &&
                                        mask.layout() == diff_dst.layout() &&
                                        diff_src.layout() == diff_dst.layout())
            << "Dropout: mask " << mask.description() << " and diff_src " << diff_src.description()
            << " must be in the layout of diff_dst " << diff_dst.description();
        // Both tensors are in the same storage order, so the mask applies element by element.
        const float* dy = diff_dst.data<float>();
        const unsigned char* m = mask.data<unsigned char>();
        float* dx = diff_src.data<float>();
        const float keep_scale = 1.f / (1.f - p);
        const std::int64_t n = config_.numel;
#pragma omp parallel for simd if (n > kParallelMin)
        for (std::int64_t i = 0; i < n; ++i) dx[i] = m[i] ? dy[i] * keep_scale : 0.f;
    }

private:
    void check(const Tensor& t, const char* what) const {
        TANDEM_CHECK_AS(ShapeError, t.numel() == config_.numel && t.dtype() == DType::f32)
            << "Dropout: " << what << " " << t.description() << " does not fit a kernel built for "
            << config_.numel << " f32 elements";
    }

    DropoutConfig config_;
};

}  // namespace

std::unique_ptr<DropoutKernel> make_dropout_cpu(Device&, const DropoutConfig& config) {
    return std::make_unique<DropoutCpu>(config);
}

}  // namespace tandem::cpu
