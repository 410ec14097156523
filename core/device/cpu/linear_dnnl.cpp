// Linear on oneDNN's matmul: the three products of a fully connected layer are matmuls over
// plain row-major tensors, with transposes expressed as strides, so no weight is reordered.
// matmul rather than inner_product because the weight gradient can then accumulate in place
// through a sum post-op (our contract adds; inner_product would overwrite a scratch buffer
// that is then added back), and because the batch is often small, where matmul's brgemm
// kernels do well.
// In bf16 (device/precision.h) each product reads bfloat16 copies of its operands, converted
// by reorders on each call (the weights into a buffer of the kernel's, the activation and the
// incoming gradient into the device's activation scratch), and writes float32.
#include "device/cpu/dnnl_activation.h"
#include "device/cpu/dnnl_context.h"
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::memory::desc row_major(std::int64_t rows, std::int64_t cols, dt type = dt::f32) {
    return {{rows, cols}, type, tag::ab};
}

// The rows x cols transpose of a row-major cols x rows matrix, without moving it.
dnnl::memory::desc transposed(std::int64_t rows, std::int64_t cols, dt type = dt::f32) {
    return {{rows, cols}, type, dnnl::memory::dims{1, rows}};
}

// The conversion of one operand into the products' type (bf16): a reorder from our float32
// matrix into memory the kernel places. Without one (fp32) the products read our tensor.
struct Conversion {
    dnnl::memory from, to;
    dnnl::reorder reorder;

    Conversion() = default;
    // A rows x cols row-major matrix.
    Conversion(std::int64_t rows, std::int64_t cols, dt type, const dnnl::engine& engine) {
        if (type == dt::f32) return;
        from = dnnl::memory(row_major(rows, cols), engine, DNNL_MEMORY_NONE);
        to = dnnl::memory(row_major(rows, cols, type), engine, DNNL_MEMORY_NONE);
        reorder = dnnl::reorder(from, to);
    }
    std::size_t bytes() const { return reorder ? to.get_desc().get_size() : 0; }
    // Where the products read `t` from: converted into place, or `t` itself.
    void* apply(CpuDevice& device, const Tensor& t) {
        if (!reorder) return t.raw();
        from.set_data_handle(t.raw());
        execute(device, reorder, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}},
                "reorder (linear operand)");
        return to.get_data_handle();
    }
};

class LinearDnnl final : public LinearKernel {
public:
    LinearDnnl(Device& device, const LinearConfig& config)
        : device_(as_cpu(device)), config_(config) {
        dnnl_call("matmul (build)", [&] { build(); });
    }

    // dst = src W^T + b
    void forward(const Tensor& src, const Tensor& weights, const Tensor& bias,
                 Tensor& dst) override {
        place_scratch();
        dnnl_args args{{DNNL_ARG_SRC, at(x_, src_.apply(device_, src))},
                       {DNNL_ARG_WEIGHTS, at(w_t_, weights_.apply(device_, weights))},
                       {DNNL_ARG_DST, at(y_, dst.raw())}};
        if (config_.bias) args.emplace(DNNL_ARG_BIAS, at(bias_, bias.raw()));
        execute(device_, forward_, args, "matmul (linear forward)");
    }

    void backward_data(const Tensor& diff_dst, const Tensor& weights, Tensor& diff_src) override {
        place_scratch();
        data_with(diff_dst_.apply(device_, diff_dst), weights, diff_src);
    }

    void backward_weights(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                          Tensor& diff_bias) override {
        place_scratch();
        weights_with(src, diff_dst, diff_dst_.apply(device_, diff_dst), diff_weights, diff_bias);
    }

    // Both gradients from one conversion of diff_dst (bf16).
    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& weights,
                  Tensor& diff_src, Tensor& diff_weights, Tensor& diff_bias) override {
        place_scratch();
        void* dy = diff_dst_.apply(device_, diff_dst);
        weights_with(src, diff_dst, dy, diff_weights, diff_bias);
        data_with(dy, weights, diff_src);
    }

private:
    // diff_src = diff_dst W, diff_dst read from `dy` (the products' type).
    void data_with(void* dy, const Tensor& weights, Tensor& diff_src) {
        execute(device_, backward_data_,
                {{DNNL_ARG_SRC, at(dy_, dy)},
                 {DNNL_ARG_WEIGHTS, at(w_, weights_.apply(device_, weights))},
                 {DNNL_ARG_DST, at(dx_, diff_src.raw())}},
                "matmul (linear backward_data)");
    }

    // diff_weights += diff_dst^T src, diff_dst read from `dy`; diff_bias += column sums of
    // diff_dst.
    void weights_with(const Tensor& src, const Tensor& diff_dst, void* dy, Tensor& diff_weights,
                      Tensor& diff_bias) {
        execute(device_, backward_weights_,
                {{DNNL_ARG_SRC, at(dy_t_, dy)},
                 {DNNL_ARG_WEIGHTS, at(x_, src_.apply(device_, src))},
                 {DNNL_ARG_DST, at(dw_, diff_weights.raw())}},
                "matmul (linear backward_weights)");
        if (!config_.bias) return;
        // n x out additions: too small to be worth a primitive. In bf16 the gradient is read
        // rounded, as the products read it (and oneDNN's bf16 convolutions their bias's).
        const float* g = diff_dst.data<float>();
        float* db = diff_bias.data<float>();
        const std::int64_t out = config_.out_features;
        const bool rounded = config_.precision == Precision::bf16;
        for (std::int64_t i = 0; i < config_.n; ++i)
#pragma omp simd
            for (std::int64_t j = 0; j < out; ++j) {
                const float v = g[i * out + j];
                db[j] += rounded ? round_to_bf16(v) : v;
            }
    }

    void build() {
        const auto& c = config_;
        auto& engine = device_.dnnl_engine();
        const dt operand = c.precision == Precision::bf16 ? dt::bf16 : dt::f32;
        // The operands as the products read them.
        const auto x_md = row_major(c.n, c.in_features, operand);
        const auto dy_md = row_major(c.n, c.out_features, operand);
        const auto w_md = row_major(c.out_features, c.in_features, operand);
        const auto w_t_md = transposed(c.in_features, c.out_features, operand);
        const auto dy_t_md = transposed(c.out_features, c.n, operand);
        // The results, float32 in either precision.
        const auto y_md = row_major(c.n, c.out_features);
        const auto dx_md = row_major(c.n, c.in_features);
        const auto dw_md = row_major(c.out_features, c.in_features);
        const auto bias_md = row_major(1, c.out_features);

        forward_ = dnnl::matmul(
            dnnl::matmul::primitive_desc(c.bias ? dnnl::matmul::desc(x_md, w_t_md, bias_md, y_md)
                                                : dnnl::matmul::desc(x_md, w_t_md, y_md),
                                         engine));
        backward_data_ = dnnl::matmul(
            dnnl::matmul::primitive_desc(dnnl::matmul::desc(dy_md, w_md, dx_md), engine));
        dnnl::post_ops accumulate;
        accumulate.append_sum(1.f);
        dnnl::primitive_attr attr;
        attr.set_post_ops(accumulate);
        backward_weights_ = dnnl::matmul(
            dnnl::matmul::primitive_desc(dnnl::matmul::desc(dy_t_md, x_md, dw_md), attr, engine));

        // Handles are set per call: these describe the caller's tensors or the converted copies.
        x_ = dnnl::memory(x_md, engine, DNNL_MEMORY_NONE);
        dy_ = dnnl::memory(dy_md, engine, DNNL_MEMORY_NONE);
        w_ = dnnl::memory(w_md, engine, DNNL_MEMORY_NONE);
        w_t_ = dnnl::memory(w_t_md, engine, DNNL_MEMORY_NONE);
        dy_t_ = dnnl::memory(dy_t_md, engine, DNNL_MEMORY_NONE);
        y_ = dnnl::memory(y_md, engine, DNNL_MEMORY_NONE);
        dx_ = dnnl::memory(dx_md, engine, DNNL_MEMORY_NONE);
        dw_ = dnnl::memory(dw_md, engine, DNNL_MEMORY_NONE);
        bias_ = dnnl::memory(bias_md, engine, DNNL_MEMORY_NONE);

        src_ = Conversion(c.n, c.in_features, operand, engine);
        diff_dst_ = Conversion(c.n, c.out_features, operand, engine);
        weights_ = Conversion(c.out_features, c.in_features, operand, engine);
        if (weights_.bytes() > 0) {
            // The weights' copy is the kernel's own (from the device's allocator, so it counts
            // against the cap); the activation's and the gradient's share the device's scratch.
            const auto floats = static_cast<std::int64_t>((weights_.bytes() + 3) / 4);
            weights_copy_ = Tensor::empty({floats}, device_);
            weights_.to.set_data_handle(weights_copy_.raw());
        }
        // Rounded up so the gradient's copy starts on a cache line.
        src_bytes_ = (src_.bytes() + 63) / 64 * 64;
    }

    // Points the activation's and the gradient's copies at this thread's scratch (bf16).
    void place_scratch() {
        if (src_bytes_ + diff_dst_.bytes() == 0) return;
        auto* base = static_cast<char*>(
            activation_scratch(device_).for_calling_thread(src_bytes_ + diff_dst_.bytes()));
        src_.to.set_data_handle(base);
        diff_dst_.to.set_data_handle(base + src_bytes_);
    }

    static dnnl::memory& at(dnnl::memory& memory, void* data) {
        memory.set_data_handle(data);
        return memory;
    }

    CpuDevice& device_;
    LinearConfig config_;
    dnnl::matmul forward_, backward_data_, backward_weights_;
    dnnl::memory x_, dy_, w_, w_t_, dy_t_, y_, dx_, dw_, bias_;
    Conversion src_, diff_dst_, weights_;
    Tensor weights_copy_;
    std::size_t src_bytes_ = 0;
};

}  // namespace

std::unique_ptr<LinearKernel> make_linear_dnnl(Device& device, const LinearConfig& config) {
    return std::make_unique<LinearDnnl>(device, config);
}

}  // namespace tandem::cpu
