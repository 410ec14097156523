// The LSTM and GRU cells on a GPU: one thread per (sample, unit) running rnn_cell_math.h's
// element functions (kernels.cu), on the compute stream.
#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/kernels.cuh"
#include "device/cuda/kernels_cuda.h"

namespace tandem::cuda {
namespace {

class RnnCellCuda final : public RnnCellKernel {
public:
    RnnCellCuda(Device& device, const RnnCellConfig& c) : device_(as_cuda(device)), config_(c) {}

    void forward(const Tensor& gx, const Tensor& gh, const Tensor& h_prev, const Tensor& c_prev,
                 Tensor& h, Tensor& c, Tensor& saved) override {
        const bool lstm = config_.kind == RnnCellKind::lstm;
        const std::int64_t units = config_.n * config_.hidden,
                           gates = RnnCellKernel::gates(config_.kind);
        const float* x = float_ptr(gx, device_, units * gates, "RnnCell gx");
        const float* y = float_ptr(gh, device_, units * gates, "RnnCell gh");
        const float* hp = float_ptr(h_prev, device_, units, "RnnCell h_prev");
        float* out = float_ptr(h, device_, units, "RnnCell h");
        float* s = float_ptr(saved, device_, units * kSavedGates, "RnnCell saved");
        const float* cp = lstm ? float_ptr(c_prev, device_, units, "RnnCell c_prev") : nullptr;
        float* cell = lstm ? float_ptr(c, device_, units, "RnnCell c") : nullptr;
        device_.activate();
        kernels::rnn_cell_forward(lstm, config_.n, config_.hidden, x, y, hp, cp, out, cell, s,
                                  device_.compute_stream());
        check_launch("rnn_cell_forward");
    }

    void backward(const Tensor& saved, const Tensor& h_prev, const Tensor& c_prev, const Tensor& c,
                  const Tensor& dh, const Tensor& dc, Tensor& dgx, Tensor& dgh, Tensor& dh_prev,
                  Tensor& dc_prev) override {
        const bool lstm = config_.kind == RnnCellKind::lstm;
        const std::int64_t units = config_.n * config_.hidden,
                           gates = RnnCellKernel::gates(config_.kind);
        const float* s = float_ptr(saved, device_, units * kSavedGates, "RnnCell saved");
        const float* hp = float_ptr(h_prev, device_, units, "RnnCell h_prev");
        const float* g = float_ptr(dh, device_, units, "RnnCell dh");
        float* dx = float_ptr(dgx, device_, units * gates, "RnnCell dgx");
        float* dy = float_ptr(dgh, device_, units * gates, "RnnCell dgh");
        float* dhp = float_ptr(dh_prev, device_, units, "RnnCell dh_prev");
        const float* cp = lstm ? float_ptr(c_prev, device_, units, "RnnCell c_prev") : nullptr;
        const float* cell = lstm ? float_ptr(c, device_, units, "RnnCell c") : nullptr;
        const float* gc = lstm ? float_ptr(dc, device_, units, "RnnCell dc") : nullptr;
        float* dcp = lstm ? float_ptr(dc_prev, device_, units, "RnnCell dc_prev") : nullptr;
        device_.activate();
        kernels::rnn_cell_backward(lstm, config_.n, config_.hidden, s, hp, cp, cell, g, gc, dx, dy,
                                   dhp, dcp, device_.compute_stream());
        check_launch("rnn_cell_backward");
    }

private:
    CudaDevice& device_;
    RnnCellConfig config_;
};

}  // namespace

std::unique_ptr<RnnCellKernel> make_rnn_cell_cuda(Device& device, const RnnCellConfig& config) {
    return std::make_unique<RnnCellCuda>(device, config);
}

}  // namespace tandem::cuda
