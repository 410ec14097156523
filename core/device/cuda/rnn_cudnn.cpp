// LSTM and GRU layers over whole sequences on cuDNN's RNN API (cudnnRNNForward,
// cudnnRNNBackwardData_v8, cudnnRNNBackwardWeights_v8): the CUDA RnnSequenceKernel (issue 18).
//
// Descriptors. A kernel is built per shape (cell, N, steps, input, hidden, layers, bias: the
// layer's KernelCache) and holds everything that shape needs: the RNN descriptor (standard
// algorithm, unidirectional, linear input, no projection: projSize = hidden, a dropout
// descriptor of probability 0, which cuDNN wants even when no dropout is applied); the data
// descriptors of x and y in CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED, which is our N x steps x
// features, every sequence the full length (cuDNN accepts the unpacked layouts only with
// CUDNN_RNN_PADDED_IO_ENABLED); the lengths again on the device (devSeqLengths: cuDNN's kernels
// read them asynchronously, so they live as long as the kernel); the hidden-state descriptor
// layers x N x hidden, packed; and the workspace and reserve sizes of both forward modes.
// Float data and float compute (mathPrec); FMA math, no TF32, unless the device allows TF32
// (its `tf32` option, as Conv2d reads it), so results stay within float tolerance of the CPU.
//
// Weights. cuDNN computes from one packed weight space; the layer keeps PyTorch's four tensors
// per layer, which the optimiser, checkpoints and the CPU path use. cuDNN's gate orders are
// PyTorch's: LSTM linLayerID 0-3 the input weights of i, f, g (cuDNN's c'), o and 4-7 the
// recurrent ones; GRU 0-2 r, z, n (cuDNN's h') and 3-5. Each matrix is hidden x in, row-major,
// so gate g's is rows [g H, (g + 1) H) of our weight, one contiguous run (PyTorch's own cuDNN
// path views its weights the same way). With CUDNN_RNN_DOUBLE_BIAS the ids' biases are b_ih's
// and b_hh's gate blocks, and cuDNN's GRU is PyTorch's (and RnnCellKernel's):
// h' = tanh(W_h x + b_Wh + r * (R_h h + b_Rh)), the reset gate applied after the recurrent
// product and its bias. cudnnGetRNNWeightParams gives each piece's place in the packed space;
// the kernel lists the copies once (merging runs adjacent on both sides) and forward packs by
// device-to-device copies on the compute stream into the `packed` tensor the layer keeps for
// backward. Backward: cudnnRNNBackwardWeights_v8 supports CUDNN_WGRAD_MODE_ADD only, so it adds
// into a zeroed packed buffer of the kernel's, which is then added piece by piece into each
// parameter's gradient (the contract adds; our gradients are separate tensors).
//
// Reserve space: the layer allocates it per training forward and keeps it in the pass's tape
// with that micro-batch's inputs, outputs and packed weights, so a pipeline running several
// micro-batches' forwards before their backwards hands each backward its own.
#include <memory>
#include <string_view>
#include <vector>

#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/kernels.cuh"
#include "device/cuda/kernels_cuda.h"

namespace tandem::cuda {
namespace {

struct RnnDescDeleter {
    void operator()(cudnnRNNStruct* d) const { cudnnDestroyRNNDescriptor(d); }
};
struct RnnDataDescDeleter {
    void operator()(cudnnRNNDataStruct* d) const { cudnnDestroyRNNDataDescriptor(d); }
};
struct RnnDropoutDeleter {
    void operator()(cudnnDropoutStruct* d) const { cudnnDestroyDropoutDescriptor(d); }
};
struct RnnTensorDeleter {
    void operator()(cudnnTensorStruct* d) const { cudnnDestroyTensorDescriptor(d); }
};

// One run of floats moved between a parameter (the layer's tensor `which`: 0 w_ih, 1 w_hh,
// 2 b_ih, 3 b_hh, from float `offset`) and the packed weight space (from byte `packed`).
struct RnnPiece {
    std::size_t layer;
    int which;
    std::int64_t offset;
    std::size_t packed;
    std::int64_t count;
};

const Tensor& rnn_param(const RnnLayerParams& p, int which) {
    switch (which) {
        case 0: return p.w_ih;
        case 1: return p.w_hh;
        case 2: return p.b_ih;
        default: return p.b_hh;
    }
}

class RnnCudnn final : public RnnSequenceKernel {
public:
    RnnCudnn(Device& device, const RnnSequenceConfig& c)
        : device_(as_cuda(device)), c_(c), lstm_(c.kind == RnnCellKind::lstm),
          gates_(static_cast<int>(RnnCellKernel::gates(c.kind))) {
        const int n = checked_int(c.n, "RnnSequence batch");
        const int steps = checked_int(c.steps, "RnnSequence steps");
        const int input = checked_int(c.input, "RnnSequence input size");
        const int hidden = checked_int(c.hidden, "RnnSequence hidden size");
        const int layers = checked_int(c.layers, "RnnSequence layers");
        device_.activate();
        cudnnHandle_t handle = device_.cudnn();

        cudnnDropoutDescriptor_t dropout = nullptr;
        TANDEM_CUDNN_CALL(cudnnCreateDropoutDescriptor(&dropout));
        dropout_.reset(dropout);
        // Probability 0: no random states are needed (nor made).
        TANDEM_CUDNN_CALL(cudnnSetDropoutDescriptor(dropout, handle, 0.f, nullptr, 0, 0));

        cudnnRNNDescriptor_t rnn = nullptr;
        TANDEM_CUDNN_CALL(cudnnCreateRNNDescriptor(&rnn));
        rnn_.reset(rnn);
        TANDEM_CUDNN_CALL(cudnnSetRNNDescriptor_v8(
            rnn, CUDNN_RNN_ALGO_STANDARD, lstm_ ? CUDNN_LSTM : CUDNN_GRU,
            c.bias ? CUDNN_RNN_DOUBLE_BIAS : CUDNN_RNN_NO_BIAS, CUDNN_UNIDIRECTIONAL,
            CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT,
            device_.tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH, input, hidden, hidden, layers,
            dropout, CUDNN_RNN_PADDED_IO_ENABLED));

        std::vector<int> lengths(static_cast<std::size_t>(n), steps);
        float fill = 0;
        x_ = data_desc(steps, n, input, lengths, &fill);
        y_ = data_desc(steps, n, hidden, lengths, &fill);
        seq_lengths_ = Tensor::empty({c.n}, device_, DType::i32);
        device_.copy_from_host(seq_lengths_.raw(), lengths.data(), lengths.size() * sizeof(int));

        cudnnTensorDescriptor_t h = nullptr;
        TANDEM_CUDNN_CALL(cudnnCreateTensorDescriptor(&h));
        h_.reset(h);
        const int dims[3] = {layers, n, hidden}, strides[3] = {n * hidden, hidden, 1};
        TANDEM_CUDNN_CALL(cudnnSetTensorNdDescriptor(h, CUDNN_DATA_FLOAT, 3, dims, strides));

        TANDEM_CUDNN_CALL(cudnnGetRNNWeightSpaceSize(handle, rnn, &packed_bytes_));
        std::size_t no_reserve = 0;
        TANDEM_CUDNN_CALL(cudnnGetRNNTempSpaceSizes(handle, rnn, CUDNN_FWD_MODE_INFERENCE, x_.get(),
                                                    &infer_work_, &no_reserve));
        TANDEM_CUDNN_CALL(cudnnGetRNNTempSpaceSizes(handle, rnn, CUDNN_FWD_MODE_TRAINING, x_.get(),
                                                    &train_work_, &reserve_bytes_));
    }

    std::size_t packed_bytes() const override { return packed_bytes_; }
    std::size_t reserve_bytes() const override { return reserve_bytes_; }

    void forward(const Tensor& src, const std::vector<RnnLayerParams>& weights, const Tensor& h0,
                 const Tensor& c0, Tensor& packed, Tensor& dst, Tensor& reserve) override {
        const float* x = float_ptr(src, device_, c_.n * c_.steps * c_.input, "RnnSequence src");
        float* y = float_ptr(dst, device_, c_.n * c_.steps * c_.hidden, "RnnSequence dst");
        void* w = device_ptr(packed, device_, DType::u8, packed_numel(), "RnnSequence packed");
        const bool training = reserve.defined();
        void* r = training ? device_ptr(reserve, device_, DType::u8, reserve_numel(),
                                        "RnnSequence reserve")
                           : nullptr;
        const float* hx = state_ptr(h0, "RnnSequence h0");
        const float* cx = lstm_ ? state_ptr(c0, "RnnSequence c0") : nullptr;
        device_.activate();
        if (pieces_.empty()) map_weights(w);
        copy_pieces(weights, w);
        const std::size_t work = training ? train_work_ : infer_work_;
        TANDEM_CUDNN_CALL(cudnnRNNForward(
            device_.cudnn(), rnn_.get(),
            training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE, seq_lengths(), x_.get(),
            x, y_.get(), y, h_.get(), hx, nullptr, h_.get(), cx, nullptr, packed_bytes_, w, work,
            workspace(work), training ? reserve_bytes_ : 0, r));
    }

    void backward(const Tensor& src, const Tensor& dst, const Tensor& diff_dst, const Tensor& h0,
                  const Tensor& c0, const Tensor& packed, Tensor& reserve, Tensor& diff_src,
                  Tensor& diff_h0, Tensor& diff_c0,
                  const std::vector<RnnLayerParams>& diff_weights) override {
        const std::int64_t xs = c_.n * c_.steps * c_.input, ys = c_.n * c_.steps * c_.hidden;
        const float* x = float_ptr(src, device_, xs, "RnnSequence backward src");
        const float* y = float_ptr(dst, device_, ys, "RnnSequence backward dst");
        const float* dy = float_ptr(diff_dst, device_, ys, "RnnSequence diff_dst");
        float* dx = float_ptr(diff_src, device_, xs, "RnnSequence diff_src");
        const void* w =
            device_ptr(packed, device_, DType::u8, packed_numel(), "RnnSequence packed");
        void* r = device_ptr(reserve, device_, DType::u8, reserve_numel(), "RnnSequence reserve");
        const float* hx = state_ptr(h0, "RnnSequence h0");
        const float* cx = lstm_ ? state_ptr(c0, "RnnSequence c0") : nullptr;
        float* dhx = state_ptr(diff_h0, "RnnSequence diff_h0");
        float* dcx = lstm_ ? state_ptr(diff_c0, "RnnSequence diff_c0") : nullptr;
        device_.activate();
        if (pieces_.empty()) map_weights(const_cast<void*>(w));
        cudnnHandle_t handle = device_.cudnn();
        void* work = workspace(train_work_);
        // dhy and dcy null: nothing flows into the last step's states but through dy (the
        // layer puts a last-step-only gradient into dy's last step).
        TANDEM_CUDNN_CALL(cudnnRNNBackwardData_v8(handle, rnn_.get(), seq_lengths(), y_.get(), y,
                                                  dy, x_.get(), dx, h_.get(), hx, nullptr, dhx,
                                                  h_.get(), cx, nullptr, dcx, packed_bytes_, w,
                                                  train_work_, work, reserve_bytes_, r));
        if (!grads_.defined()) grads_ = Tensor::empty({packed_numel()}, device_, DType::u8);
        void* dw = grads_.raw();
        TANDEM_CUDA_CALL(cudaMemsetAsync(dw, 0, packed_bytes_, device_.compute_stream()));
        TANDEM_CUDNN_CALL(cudnnRNNBackwardWeights_v8(
            handle, rnn_.get(), CUDNN_WGRAD_MODE_ADD, seq_lengths(), x_.get(), x, h_.get(), hx,
            y_.get(), y, packed_bytes_, dw, train_work_, work, reserve_bytes_, r));
        add_pieces(dw, diff_weights);
    }

private:
    using DataDescPtr = std::unique_ptr<cudnnRNNDataStruct, RnnDataDescDeleter>;

    static DataDescPtr data_desc(int steps, int n, int features, const std::vector<int>& lengths,
                                 float* fill) {
        cudnnRNNDataDescriptor_t d = nullptr;
        TANDEM_CUDNN_CALL(cudnnCreateRNNDataDescriptor(&d));
        DataDescPtr desc(d);
        TANDEM_CUDNN_CALL(cudnnSetRNNDataDescriptor(d, CUDNN_DATA_FLOAT,
                                                    CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED,
                                                    steps, n, features, lengths.data(), fill));
        return desc;
    }

    std::int64_t packed_numel() const { return static_cast<std::int64_t>(packed_bytes_); }
    std::int64_t reserve_numel() const { return static_cast<std::int64_t>(reserve_bytes_); }
    const int* seq_lengths() const { return static_cast<const int*>(seq_lengths_.raw()); }
    void* workspace(std::size_t bytes) { return bytes ? device_.workspace(bytes) : nullptr; }

    // A layers x N x hidden state, or null when undefined (cuDNN reads zeros, skips a gradient).
    float* state_ptr(const Tensor& t, std::string_view what) const {
        return t.defined() ? float_ptr(t, device_, c_.layers * c_.n * c_.hidden, what) : nullptr;
    }

    std::int64_t layer_input(std::size_t k) const { return k == 0 ? c_.input : c_.hidden; }

    // Floats in the layer's tensor `which` of layer k.
    std::int64_t param_numel(std::size_t k, int which) const {
        const std::int64_t rows = gates_ * c_.hidden;
        return which == 0 ? rows * layer_input(k) : which == 1 ? rows * c_.hidden : rows;
    }

    // Where every matrix and bias lies in a packed weight space starting at `base` (cuDNN
    // only computes addresses here), as runs from and to our tensors.
    void map_weights(void* base) {
        cudnnTensorDescriptor_t m = nullptr, b = nullptr;
        TANDEM_CUDNN_CALL(cudnnCreateTensorDescriptor(&m));
        std::unique_ptr<cudnnTensorStruct, RnnTensorDeleter> m_owner(m);
        TANDEM_CUDNN_CALL(cudnnCreateTensorDescriptor(&b));
        std::unique_ptr<cudnnTensorStruct, RnnTensorDeleter> b_owner(b);
        const std::int64_t h = c_.hidden;
        std::vector<RnnPiece> pieces;
        for (std::size_t k = 0; k < static_cast<std::size_t>(c_.layers); ++k) {
            std::vector<RnnPiece> biases;
            for (int id = 0; id < 2 * gates_; ++id) {
                void* m_addr = nullptr;
                void* b_addr = nullptr;
                TANDEM_CUDNN_CALL(cudnnGetRNNWeightParams(device_.cudnn(), rnn_.get(),
                                                          static_cast<int>(k), packed_bytes_, base,
                                                          id, m, &m_addr, b, &b_addr));
                const int which = id < gates_ ? 0 : 1, gate = id % gates_;
                const std::int64_t cols = which == 0 ? layer_input(k) : h;
                check_piece(m, m_addr, h * cols, k, id, "matrix");
                pieces.push_back({k, which, gate * h * cols, offset(base, m_addr), h * cols});
                if (!c_.bias) continue;
                check_piece(b, b_addr, h, k, id, "bias");
                biases.push_back({k, which + 2, gate * h, offset(base, b_addr), h});
            }
            pieces.insert(pieces.end(), biases.begin(), biases.end());
        }
        // Merge runs that follow each other in both places: the gates of one weight, in
        // cuDNN's layout, become one copy.
        for (const RnnPiece& p : pieces) {
            if (!pieces_.empty()) {
                RnnPiece& last = pieces_.back();
                if (last.layer == p.layer && last.which == p.which &&
                    last.offset + last.count == p.offset &&
                    last.packed + static_cast<std::size_t>(last.count) * sizeof(float) ==
                        p.packed) {
                    last.count += p.count;
                    continue;
                }
            }
            pieces_.push_back(p);
        }
    }

    static std::size_t offset(void* base, void* addr) {
        return static_cast<std::size_t>(static_cast<char*>(addr) - static_cast<char*>(base));
    }

    void check_piece(cudnnTensorDescriptor_t desc, void* addr, std::int64_t numel, std::size_t k,
                     int id, const char* what) const {
        cudnnDataType_t type{};
        int rank = 0, dims[3] = {0, 0, 0}, strides[3] = {0, 0, 0};
        TANDEM_CUDNN_CALL(cudnnGetTensorNdDescriptor(desc, 3, &type, &rank, dims, strides));
        std::int64_t got = rank > 0 ? 1 : 0;
        for (int d = 0; d < rank && d < 3; ++d) got *= dims[d];
        // Only the size is checked (as PyTorch does): cuDNN documents dims {1, rows, cols}, and
        // the gate blocks' row-major order is what every caller of this API relies on.
        TANDEM_CHECK_AS(BackendError, addr != nullptr && got == numel)
            << "RnnSequence: cuDNN's " << what << " of layer " << k << ", linLayerID " << id
            << " has " << got << " floats (" << rank << " dimensions), the layer's has " << numel;
    }

    void copy_pieces(const std::vector<RnnLayerParams>& weights, void* packed) {
        check_params(weights, "RnnSequence weights");
        for (const RnnPiece& p : pieces_) {
            const float* from =
                static_cast<const float*>(rnn_param(weights[p.layer], p.which).raw());
            TANDEM_CUDA_CALL(cudaMemcpyAsync(static_cast<char*>(packed) + p.packed, from + p.offset,
                                             static_cast<std::size_t>(p.count) * sizeof(float),
                                             cudaMemcpyDeviceToDevice, device_.compute_stream()));
        }
    }

    void add_pieces(const void* packed, const std::vector<RnnLayerParams>& grads) {
        check_params(grads, "RnnSequence diff_weights");
        for (const RnnPiece& p : pieces_) {
            float* to = static_cast<float*>(rnn_param(grads[p.layer], p.which).raw());
            const auto* from =
                reinterpret_cast<const float*>(static_cast<const char*>(packed) + p.packed);
            kernels::accumulate(to + p.offset, from, p.count, device_.compute_stream());
            check_launch("accumulate (RnnSequence weight gradients)");
        }
    }

    // Every tensor of every layer on this GPU, float, of its size (biases only with bias).
    void check_params(const std::vector<RnnLayerParams>& params, std::string_view what) const {
        TANDEM_CHECK_AS(ShapeError, params.size() == static_cast<std::size_t>(c_.layers))
            << what << ": " << params.size() << " layers given, the kernel has " << c_.layers;
        for (std::size_t k = 0; k < params.size(); ++k)
            for (int which = 0; which < (c_.bias ? 4 : 2); ++which)
                float_ptr(rnn_param(params[k], which), device_, param_numel(k, which), what);
    }

    CudaDevice& device_;
    RnnSequenceConfig c_;
    bool lstm_;
    int gates_;
    std::unique_ptr<cudnnDropoutStruct, RnnDropoutDeleter> dropout_;
    std::unique_ptr<cudnnRNNStruct, RnnDescDeleter> rnn_;
    DataDescPtr x_, y_;
    std::unique_ptr<cudnnTensorStruct, RnnTensorDeleter> h_;
    Tensor seq_lengths_;  // N int32 on the GPU, every one `steps`
    std::size_t packed_bytes_ = 0, reserve_bytes_ = 0, infer_work_ = 0, train_work_ = 0;
    std::vector<RnnPiece> pieces_;  // made on the first forward
    Tensor grads_;                  // packed weight gradients, made on the first backward
};

}  // namespace

std::unique_ptr<RnnSequenceKernel> make_rnn_cudnn(Device& device, const RnnSequenceConfig& c) {
    return std::make_unique<RnnCudnn>(device, c);
}

}  // namespace tandem::cuda
