// The LSTM and GRU cells on the CPU: rnn_cell_math.h's element functions over samples x units
// (OpenMP across samples when the step is large enough to pay for a team).
#include "device/cpu/kernels_cpu.h"
#include "device/rnn_cell_math.h"

namespace tandem::cpu {
namespace {

// A unit costs several exp/tanh calls: a team pays for itself from a few thousand units.
constexpr std::int64_t kCellParallelMin = kParallelMin / 8;

class RnnCellCpu final : public RnnCellKernel {
public:
    explicit RnnCellCpu(const RnnCellConfig& config) : config_(config) {}

    void forward(const Tensor& gx, const Tensor& gh, const Tensor& h_prev, const Tensor& c_prev,
                 Tensor& h, Tensor& c, Tensor& saved) override {
        const std::int64_t n = config_.n, hidden = config_.hidden;
        const float* x = gx.data<float>();
        const float* y = gh.data<float>();
        float* s = saved.data<float>();
        float* out = h.data<float>();
        if (config_.kind == RnnCellKind::lstm) {
            const float* cp = c_prev.data<float>();
            float* cell = c.data<float>();
#pragma omp parallel for if (n * hidden > kCellParallelMin)
            for (std::int64_t b = 0; b < n; ++b)
#pragma omp simd
                for (std::int64_t j = 0; j < hidden; ++j)
                    rnn_cell::lstm_forward(b, j, hidden, x, y, cp, out, cell, s);
        } else {
            const float* hp = h_prev.data<float>();
#pragma omp parallel for if (n * hidden > kCellParallelMin)
            for (std::int64_t b = 0; b < n; ++b)
#pragma omp simd
                for (std::int64_t j = 0; j < hidden; ++j)
                    rnn_cell::gru_forward(b, j, hidden, x, y, hp, out, s);
        }
    }

    void backward(const Tensor& saved, const Tensor& h_prev, const Tensor& c_prev, const Tensor& c,
                  const Tensor& dh, const Tensor& dc, Tensor& dgx, Tensor& dgh, Tensor& dh_prev,
                  Tensor& dc_prev) override {
        const std::int64_t n = config_.n, hidden = config_.hidden;
        const float* s = saved.data<float>();
        const float* g = dh.data<float>();
        float* dx = dgx.data<float>();
        float* dy = dgh.data<float>();
        float* dhp = dh_prev.data<float>();
        if (config_.kind == RnnCellKind::lstm) {
            const float* cp = c_prev.data<float>();
            const float* cell = c.data<float>();
            const float* gc = dc.data<float>();
            float* dcp = dc_prev.data<float>();
#pragma omp parallel for if (n * hidden > kCellParallelMin)
            for (std::int64_t b = 0; b < n; ++b)
#pragma omp simd
                for (std::int64_t j = 0; j < hidden; ++j)
                    rnn_cell::lstm_backward(b, j, hidden, s, cp, cell, g, gc, dx, dy, dhp, dcp);
        } else {
            const float* hp = h_prev.data<float>();
#pragma omp parallel for if (n * hidden > kCellParallelMin)
            for (std::int64_t b = 0; b < n; ++b)
#pragma omp simd
                for (std::int64_t j = 0; j < hidden; ++j)
                    rnn_cell::gru_backward(b, j, hidden, s, hp, g, dx, dy, dhp);
        }
    }

private:
    RnnCellConfig config_;
};

}  // namespace

std::unique_ptr<RnnCellKernel> make_rnn_cell_cpu(Device&, const RnnCellConfig& config) {
    return std::make_unique<RnnCellCpu>(config);
}

}  // namespace tandem::cpu
