// Conv2d on cuDNN's legacy convolution API (still in cuDNN 9): forward, backward data and
// backward filter, each with an algorithm chosen once, when the kernel is built, under the
// device's workspace budget (plan.h: choose_algorithm). By default cuDNN's heuristics order
// the candidates (cudnnGet*Algorithm_v7, no GPU time); with the device's `benchmark` option
// cudnnFind*AlgorithmEx times them on scratch tensors. Every candidate's workspace size is
// asked of cuDNN itself (cudnnGet*WorkspaceSize), so the budget check does not depend on
// which of the two filled the perf struct's memory field. On a device in deterministic mode
// (Device::set_deterministic) the choice is cuDNN's heuristic order, never timed, among the
// algorithms cuDNN marks CUDNN_DETERMINISTIC; a kernel built before the mode changed chooses
// again on its next call. With the device's `tf32` option the descriptor allows TF32 tensor
// cores (CUDNN_DEFAULT_MATH), and each pass runs under the math type cuDNN reported for the
// algorithm chosen for it.
//
// Channels-last activations take channels-last (khwc) weights: cuDNN has no backward-data or
// backward-filter algorithm for nhwc activations beside kchw weights (none on an H100 with
// cuDNN 9.14, all six NOT_SUPPORTED). The layer keeps its weights kchw, as every other part
// of Tandem does (the optimiser, the checkpoints, the CPU kernels); the kernel turns them to
// khwc in a buffer of its own before forward and backward data, and turns the weight gradient
// back when it adds it in. Both are cudnnTransformTensor calls over the weights alone.
//
// In fp16 and bf16 (device/precision.h) cuDNN computes in PSEUDO_HALF_CONFIG or
// PSEUDO_BFLOAT16_CONFIG: x, w and y in 16 bits, products summed in float32, on tensor cores
// where the algorithm uses them (each pass under the math type cuDNN reported, as with TF32).
// The operands are narrowed copies of our float32 tensors (half_operands.h), and the results
// come out in 16 bits, rounded once more, as PyTorch's CUDA autocast gives them: the output
// and the input's gradient are widened into the float32 tensors, the weight gradient added
// into the float32 one. The weights' khwc transforms stay in float32 (narrowing is element by
// element, so the order does not matter). The bias is added to the float32 output, and its
// gradient summed from the float32 incoming gradient: cuDNN's bias gradient takes one type for
// both, and float sums of the unrounded gradient are the more exact.
#include <vector>

#include "base/format.h"
#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/half_operands.h"
#include "device/cuda/kernels_cuda.h"

namespace tandem::cuda {
namespace {

// The math a convolution may use: FMA only for float operands (so they give the CPU's results
// to float rounding) unless the device allows TF32 (cuDNN's default math then permits it);
// tensor-op math, which permits half and bfloat16 tensor cores, for 16-bit operands (as
// PyTorch asks for them).
cudnnMathType_t allowed_math(const CudaDevice& device, const HalfOperands& half) {
    if (half.narrowed()) return CUDNN_TENSOR_OP_MATH;
    return device.tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

class Conv2dCudnn final : public Conv2dKernel {
public:
    Conv2dCudnn(Device& device, const Conv2dConfig& c)
        : device_(as_cuda(device)), config_(c), half_(device_, c.precision),
          x_(dims4(c.n, c.c, c.h, c.w, c.layout, "Conv2d src"), half_.cudnn_type()),
          y_(dims4(c.n, c.out_channels, c.out_h(), c.out_w(), c.layout, "Conv2d dst"),
             half_.cudnn_type()),
          y_float_(dims4(c.n, c.out_channels, c.out_h(), c.out_w(), c.layout, "Conv2d dst")),
          bias_(dims4(1, c.out_channels, 1, 1, Layout::contiguous, "Conv2d bias")),
          khwc_(c.layout == Layout::channels_last),
          w_(checked_int(c.out_channels, "Conv2d out_channels"),
             checked_int(c.c / c.groups, "Conv2d in_channels / groups"),
             checked_int(c.kernel_h, "Conv2d kernel"), checked_int(c.kernel_w, "Conv2d kernel"),
             khwc_ ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, half_.cudnn_type()),
          w_kchw_(dims4(c.out_channels, c.c / c.groups, c.kernel_h, c.kernel_w, Layout::contiguous,
                        "Conv2d weights")),
          w_khwc_(dims4(c.out_channels, c.c / c.groups, c.kernel_h, c.kernel_w,
                        Layout::channels_last, "Conv2d weights")),
          allowed_math_(allowed_math(device_, half_)), conv_(c, allowed_math_) {
        device_.activate();
        int n = 0, ch = 0, h = 0, w = 0;
        TANDEM_CUDNN_CALL(cudnnGetConvolution2dForwardOutputDim(conv_.get(), x_.get(), w_.get(), &n,
                                                                &ch, &h, &w));
        TANDEM_CHECK_AS(ShapeError,
                        n == c.n && ch == c.out_channels && h == c.out_h() && w == c.out_w())
            << "Conv2d: cuDNN computes a " << n << "x" << ch << "x" << h << "x" << w
            << " output, the layer expects " << c.n << "x" << c.out_channels << "x" << c.out_h()
            << "x" << c.out_w();
        choose_algorithms();
    }

    void forward(const Tensor& src, const Tensor& weights, const Tensor& bias,
                 Tensor& dst) override {
        const void* x = float_ptr(src, device_, src_numel(), "Conv2d forward src");
        const void* w = float_ptr(weights, device_, weights_numel(), "Conv2d forward weights");
        void* y = float_ptr(dst, device_, dst_numel(), "Conv2d forward dst");
        const void* b = config_.bias
                            ? float_ptr(bias, device_, config_.out_channels, "Conv2d forward bias")
                            : nullptr;
        begin_call();
        use_math(fwd_math_);
        Tensor x_half, w_half, y_half;  // mixed precision's 16-bit copies, for this call
        const void* x_op = half_.read(x, src_numel(), x_half);
        const void* w_op = filter(w, w_half);
        void* y_op = half_.result(y, dst_numel(), y_half);
        TANDEM_CUDNN_CALL(cudnnConvolutionForward(device_.cudnn(), &kOne, x_.get(), x_op, w_.get(),
                                                  w_op, conv_.get(), fwd_, workspace(fwd_bytes_),
                                                  fwd_bytes_, &kZero, y_.get(), y_op));
        half_.widen(y_half, y, dst_numel());
        if (b)
            TANDEM_CUDNN_CALL(
                cudnnAddTensor(device_.cudnn(), &kOne, bias_.get(), b, &kOne, y_float_.get(), y));
    }

    void backward_data(const Tensor& diff_dst, const Tensor& weights, Tensor& diff_src) override {
        const void* dy = float_ptr(diff_dst, device_, dst_numel(), "Conv2d backward diff_dst");
        const void* w = float_ptr(weights, device_, weights_numel(), "Conv2d backward weights");
        void* dx = float_ptr(diff_src, device_, src_numel(), "Conv2d backward diff_src");
        begin_call();
        Tensor dy_half;
        data_with(half_.read(dy, dst_numel(), dy_half), w, dx);
    }

    void backward_weights(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                          Tensor& diff_bias) override {
        const void* x = float_ptr(src, device_, src_numel(), "Conv2d backward src");
        const void* dy = float_ptr(diff_dst, device_, dst_numel(), "Conv2d backward diff_dst");
        void* dw = float_ptr(diff_weights, device_, weights_numel(), "Conv2d diff_weights");
        void* db = diff_bias_ptr(diff_bias);
        begin_call();
        Tensor dy_half;
        weights_with(x, half_.read(dy, dst_numel(), dy_half), dy, dw, db);
    }

    // Both gradients from one narrowing of diff_dst (mixed precision).
    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& weights,
                  Tensor& diff_src, Tensor& diff_weights, Tensor& diff_bias) override {
        const void* x = float_ptr(src, device_, src_numel(), "Conv2d backward src");
        const void* dy = float_ptr(diff_dst, device_, dst_numel(), "Conv2d backward diff_dst");
        const void* w = float_ptr(weights, device_, weights_numel(), "Conv2d backward weights");
        void* dx = float_ptr(diff_src, device_, src_numel(), "Conv2d backward diff_src");
        void* dw = float_ptr(diff_weights, device_, weights_numel(), "Conv2d diff_weights");
        void* db = diff_bias_ptr(diff_bias);
        begin_call();
        Tensor dy_half;
        const void* dy_op = half_.read(dy, dst_numel(), dy_half);
        weights_with(x, dy_op, dy, dw, db);
        data_with(dy_op, w, dx);
    }

private:
    // diff_src = the input's gradient, from the incoming gradient as the products read it
    // (`dy_op`: float32, or its 16-bit copy).
    void data_with(const void* dy_op, const void* w, void* dx) {
        use_math(data_math_);
        Tensor w_half, dx_half;
        const void* w_op = filter(w, w_half);
        void* dx_op = half_.result(dx, src_numel(), dx_half);
        TANDEM_CUDNN_CALL(cudnnConvolutionBackwardData(
            device_.cudnn(), &kOne, w_.get(), w_op, y_.get(), dy_op, conv_.get(), data_,
            workspace(data_bytes_), data_bytes_, &kZero, x_.get(), dx_op));
        half_.widen(dx_half, dx, src_numel());
    }

    // diff_weights += the weights' gradient, from src and the incoming gradient as the
    // products read it (`dy_op`); diff_bias (when not null) += the sums of the float32 one.
    void weights_with(const void* x, const void* dy_op, const void* dy, void* dw, void* db) {
        use_math(filter_math_);
        Tensor x_half, dw_half;
        const void* x_op = half_.read(x, src_numel(), x_half);
        // The gradient is added into diff_weights (the kernel contract): by cuDNN itself
        // (beta = 1) where it writes them in place (fp32, kchw), else from the copy it writes
        // (khwc, 16 bits or both; beta = 0) below.
        void* filter_dst = khwc_ ? khwc_buffer(dw_khwc_) : dw;
        void* dw_op = half_.result(filter_dst, weights_numel(), dw_half);
        TANDEM_CUDNN_CALL(cudnnConvolutionBackwardFilter(
            device_.cudnn(), &kOne, x_.get(), x_op, y_.get(), dy_op, conv_.get(), filter_,
            workspace(filter_bytes_), filter_bytes_, dw_op == dw ? &kOne : &kZero, w_.get(),
            dw_op));
        if (khwc_) {
            half_.widen(dw_half, filter_dst, weights_numel());
            TANDEM_CUDNN_CALL(cudnnTransformTensor(device_.cudnn(), &kOne, w_khwc_.get(),
                                                   filter_dst, &kOne, w_kchw_.get(), dw));
        } else {
            half_.add_widened(dw_half, dw, weights_numel());
        }
        if (db)
            TANDEM_CUDNN_CALL(cudnnConvolutionBackwardBias(device_.cudnn(), &kOne, y_float_.get(),
                                                           dy, &kOne, bias_.get(), db));
    }

    // diff_bias's address, or null for a kernel without bias.
    void* diff_bias_ptr(Tensor& diff_bias) const {
        if (!config_.bias) return nullptr;
        return float_ptr(diff_bias, device_, config_.out_channels, "Conv2d diff_bias");
    }

    std::int64_t src_numel() const {
        const auto& c = config_;
        return c.n * c.c * c.h * c.w;
    }
    std::int64_t weights_numel() const {
        const auto& c = config_;
        return c.out_channels * (c.c / c.groups) * c.kernel_h * c.kernel_w;
    }
    std::int64_t dst_numel() const {
        const auto& c = config_;
        return c.n * c.out_channels * c.out_h() * c.out_w();
    }
    void* workspace(std::size_t bytes) { return bytes ? device_.workspace(bytes) : nullptr; }

    // What every pass does first: this GPU current, and algorithms chosen for the device's
    // deterministic mode as it is now.
    void begin_call() {
        device_.activate();
        if (device_.deterministic() != chosen_deterministic_) choose_algorithms();
    }

    // With tensor cores allowed (TF32, or 16-bit operands), each pass runs under the math type
    // cuDNN reported for its algorithm (the three share one descriptor); without, the
    // descriptor stays on FMA math.
    void use_math(cudnnMathType_t math) {
        if (allowed_math_ != CUDNN_FMA_MATH)
            TANDEM_CUDNN_CALL(cudnnSetConvolutionMathType(conv_.get(), math));
    }

    // A weights-sized buffer of this kernel's, made on first use (it counts against the
    // device's cap like any tensor).
    void* khwc_buffer(Tensor& buffer) {
        if (!buffer.defined()) buffer = Tensor::empty({weights_numel()}, device_);
        return buffer.raw();
    }

    // The weights as the filter descriptor w_ takes them: as given (kchw), or turned to khwc
    // for channels-last activations, then narrowed into `held` in mixed precision. The weights
    // change every step, so this runs every call.
    const void* filter(const void* kchw, Tensor& held) {
        const void* w = kchw;
        if (khwc_) {
            void* khwc = khwc_buffer(w_khwc_copy_);
            TANDEM_CUDNN_CALL(cudnnTransformTensor(device_.cudnn(), &kOne, w_kchw_.get(), kchw,
                                                   &kZero, w_khwc_.get(), khwc));
            w = khwc;
        }
        return half_.read(w, weights_numel(), held);
    }

    std::string what(const char* pass) const {
        const auto& c = config_;
        return std::string("Conv2d ") + pass + " (" + std::to_string(c.n) + "x" +
               std::to_string(c.c) + "x" + std::to_string(c.h) + "x" + std::to_string(c.w) +
               " -> " + std::to_string(c.out_channels) + " channels, kernel " +
               std::to_string(c.kernel_h) + "x" + std::to_string(c.kernel_w) + ", " +
               (half_.narrowed() ? std::string(precision_name(c.precision)) + ", " : "") +
               device_.name() + ")";
    }

    // Candidates in cuDNN's order with each one's workspace asked of cuDNN (under the math
    // type the candidate would run with); `size` returns the status of the workspace query
    // for algorithm `a` and fills `bytes`.
    template <class Perf, class SizeFn>
    std::vector<AlgoCandidate> candidates(const std::vector<Perf>& perf, int returned,
                                          SizeFn size) {
        std::vector<AlgoCandidate> out;
        for (int i = 0; i < returned; ++i) {
            const Perf& p = perf[std::size_t(i)];
            cudnnStatus_t status = p.status;
            std::size_t memory = 0;
            if (status == CUDNN_STATUS_SUCCESS) use_math(p.mathType);
            if (status == CUDNN_STATUS_SUCCESS) status = size(p.algo, memory);
            const bool ok = status == CUDNN_STATUS_SUCCESS;
            out.push_back({int(p.algo), ok, ok ? "" : cudnnGetErrorString(status), p.time, memory,
                           p.determinism == CUDNN_DETERMINISTIC});
        }
        return out;
    }

    void choose_algorithms() {
        auto h = device_.cudnn();
        const std::size_t budget = device_.workspace_budget();
        const bool deterministic = device_.deterministic();
        // Timing may pick another algorithm next run or on the next device: not when every
        // run and every layout must give the same bits.
        const bool timed = device_.benchmark() && !deterministic;
        // Scratch operands of the products' type for the timed search, from the device's
        // allocator (so they count against its cap) and dropped once the choice is made.
        Tensor x, w, y;
        if (timed) {
            x = half_.scratch(src_numel());
            w = half_.scratch(weights_numel());
            y = half_.scratch(dst_numel());
        }
        void* ws = timed ? device_.workspace(budget) : nullptr;

        {
            int max = 0, returned = 0;
            TANDEM_CUDNN_CALL(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max));
            use_math(allowed_math_);  // the query sees every math type allowed
            std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(std::size_t(std::max(max, 1)));
            if (timed)
                TANDEM_CUDNN_CALL(cudnnFindConvolutionForwardAlgorithmEx(
                    h, x_.get(), x.raw(), w_.get(), w.raw(), conv_.get(), y_.get(), y.raw(), max,
                    &returned, perf.data(), ws, budget));
            else
                TANDEM_CUDNN_CALL(cudnnGetConvolutionForwardAlgorithm_v7(
                    h, x_.get(), w_.get(), conv_.get(), y_.get(), max, &returned, perf.data()));
            const auto list = candidates(perf, returned, [&](auto algo, std::size_t& bytes) {
                return cudnnGetConvolutionForwardWorkspaceSize(h, x_.get(), w_.get(), conv_.get(),
                                                               y_.get(), algo, &bytes);
            });
            const std::size_t pick = choose_algorithm(list, budget, what("forward"), deterministic);
            fwd_ = perf[pick].algo;
            fwd_math_ = perf[pick].mathType;
            fwd_bytes_ = list[pick].memory;
        }
        {
            int max = 0, returned = 0;
            TANDEM_CUDNN_CALL(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max));
            use_math(allowed_math_);  // the query sees every math type allowed
            std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(std::size_t(std::max(max, 1)));
            if (timed)
                TANDEM_CUDNN_CALL(cudnnFindConvolutionBackwardDataAlgorithmEx(
                    h, w_.get(), w.raw(), y_.get(), y.raw(), conv_.get(), x_.get(), x.raw(), max,
                    &returned, perf.data(), ws, budget));
            else
                TANDEM_CUDNN_CALL(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                    h, w_.get(), y_.get(), conv_.get(), x_.get(), max, &returned, perf.data()));
            const auto list = candidates(perf, returned, [&](auto algo, std::size_t& bytes) {
                return cudnnGetConvolutionBackwardDataWorkspaceSize(
                    h, w_.get(), y_.get(), conv_.get(), x_.get(), algo, &bytes);
            });
            const std::size_t pick =
                choose_algorithm(list, budget, what("backward data"), deterministic);
            data_ = perf[pick].algo;
            data_math_ = perf[pick].mathType;
            data_bytes_ = list[pick].memory;
        }
        {
            int max = 0, returned = 0;
            TANDEM_CUDNN_CALL(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max));
            use_math(allowed_math_);  // the query sees every math type allowed
            std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(std::size_t(std::max(max, 1)));
            if (timed)
                TANDEM_CUDNN_CALL(cudnnFindConvolutionBackwardFilterAlgorithmEx(
                    h, x_.get(), x.raw(), y_.get(), y.raw(), conv_.get(), w_.get(), w.raw(), max,
                    &returned, perf.data(), ws, budget));
            else
                TANDEM_CUDNN_CALL(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                    h, x_.get(), y_.get(), conv_.get(), w_.get(), max, &returned, perf.data()));
            const auto list = candidates(perf, returned, [&](auto algo, std::size_t& bytes) {
                return cudnnGetConvolutionBackwardFilterWorkspaceSize(
                    h, x_.get(), y_.get(), conv_.get(), w_.get(), algo, &bytes);
            });
            const std::size_t pick =
                choose_algorithm(list, budget, what("backward filter"), deterministic);
            filter_ = perf[pick].algo;
            filter_math_ = perf[pick].mathType;
            filter_bytes_ = list[pick].memory;
        }
        if (timed) device_.synchronize();  // the scratch tensors go when this returns
        chosen_deterministic_ = deterministic;
    }

    CudaDevice& device_;
    Conv2dConfig config_;
    HalfOperands half_;
    TensorDesc x_, y_;            // of the products' type
    TensorDesc y_float_, bias_;   // float32: the output and its gradient, for the bias
    bool khwc_;                   // channels-last activations: the filter is khwc
    FilterDesc w_;                // of the products' type
    TensorDesc w_kchw_, w_khwc_;  // the weights as plain float32 tensors, for the transforms
    Tensor w_khwc_copy_, dw_khwc_;
    cudnnMathType_t allowed_math_;  // tensor cores unless FMA: each pass then under its own
    ConvDesc conv_;
    cudnnConvolutionFwdAlgo_t fwd_{};
    cudnnConvolutionBwdDataAlgo_t data_{};
    cudnnConvolutionBwdFilterAlgo_t filter_{};
    std::size_t fwd_bytes_ = 0, data_bytes_ = 0, filter_bytes_ = 0;
    cudnnMathType_t fwd_math_ = CUDNN_FMA_MATH, data_math_ = CUDNN_FMA_MATH,
                    filter_math_ = CUDNN_FMA_MATH;
    bool chosen_deterministic_ = false;  // the device's mode when the algorithms were chosen
};

}  // namespace

std::unique_ptr<Conv2dKernel> make_conv2d_cudnn(Device& device, const Conv2dConfig& config) {
    return std::make_unique<Conv2dCudnn>(device, config);
}

}  // namespace tandem::cuda
