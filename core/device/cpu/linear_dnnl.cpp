// Linear on oneDNN's matmul: the three products of a fully connected layer are matmuls over
// plain row-major tensors, with transposes expressed as strides, so no weight is reordered.
// matmul rather than inner_product because the weight gradient can then accumulate in place
// through a sum post-op (our contract adds; inner_product would overwrite a scratch buffer
// that is then added back), and because the batch is often small, where matmul's brgemm
// kernels do well.
#include "device/cpu/dnnl_context.h"
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::memory::desc row_major(std::int64_t rows, std::int64_t cols) {
    return {{rows, cols}, dt::f32, tag::ab};
}

// The rows x cols transpose of a row-major cols x rows matrix, without moving it.
dnnl::memory::desc transposed(std::int64_t rows, std::int64_t cols) {
    return {{rows, cols}, dt::f32, dnnl::memory::dims{1, rows}};
}

class LinearDnnl final : public LinearKernel {
public:
    LinearDnnl(Device& device, const LinearConfig& config)
        : device_(as_cpu(device)), config_(config) {
        dnnl_call("matmul (build)", [&] { build(); });
    }

    // dst = src W^T + b
    void forward(const Tensor& src, const Tensor& weights, const Tensor& bias,
                 Tensor& dst) override {
        dnnl_args args{{DNNL_ARG_SRC, bind(x_, src)},
                       {DNNL_ARG_WEIGHTS, bind(w_t_, weights)},
                       {DNNL_ARG_DST, bind(y_, dst)}};
        if (config_.bias) args.emplace(DNNL_ARG_BIAS, bind(bias_, bias));
        execute(device_, forward_, args, "matmul (linear forward)");
    }

    // diff_src = diff_dst W
    void backward_data(const Tensor& diff_dst, const Tensor& weights, Tensor& diff_src) override {
        execute(device_, backward_data_,
                {{DNNL_ARG_SRC, bind(y_, diff_dst)},
                 {DNNL_ARG_WEIGHTS, bind(w_, weights)},
                 {DNNL_ARG_DST, bind(x_, diff_src)}},
                "matmul (linear backward_data)");
    }

    // diff_weights += diff_dst^T src; diff_bias += column sums of diff_dst
    void backward_weights(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                          Tensor& diff_bias) override {
        execute(device_, backward_weights_,
                {{DNNL_ARG_SRC, bind(y_t_, diff_dst)},
                 {DNNL_ARG_WEIGHTS, bind(x_, src)},
                 {DNNL_ARG_DST, bind(w_, diff_weights)}},
                "matmul (linear backward_weights)");
        if (!config_.bias) return;
        // n x out additions: too small to be worth a primitive.
        const float* dy = diff_dst.data<float>();
        float* db = diff_bias.data<float>();
        const std::int64_t out = config_.out_features;
        for (std::int64_t i = 0; i < config_.n; ++i)
#pragma omp simd
            for (std::int64_t j = 0; j < out; ++j) db[j] += dy[i * out + j];
    }

private:
    void build() {
        const auto& c = config_;
        auto& engine = device_.dnnl_engine();
        const auto x_md = row_major(c.n, c.in_features);
        const auto y_md = row_major(c.n, c.out_features);
        const auto w_md = row_major(c.out_features, c.in_features);
        const auto w_t_md = transposed(c.in_features, c.out_features);
        const auto y_t_md = transposed(c.out_features, c.n);
        const auto bias_md = row_major(1, c.out_features);

        forward_ = dnnl::matmul(
            dnnl::matmul::primitive_desc(c.bias ? dnnl::matmul::desc(x_md, w_t_md, bias_md, y_md)
                                                : dnnl::matmul::desc(x_md, w_t_md, y_md),
                                         engine));
        backward_data_ = dnnl::matmul(
            dnnl::matmul::primitive_desc(dnnl::matmul::desc(y_md, w_md, x_md), engine));
        dnnl::post_ops accumulate;
        accumulate.append_sum(1.f);
        dnnl::primitive_attr attr;
        attr.set_post_ops(accumulate);
        backward_weights_ = dnnl::matmul(
            dnnl::matmul::primitive_desc(dnnl::matmul::desc(y_t_md, x_md, w_md), attr, engine));

        // Handles are set per call: these describe the caller's tensors, not ours.
        x_ = dnnl::memory(x_md, engine, DNNL_MEMORY_NONE);
        y_ = dnnl::memory(y_md, engine, DNNL_MEMORY_NONE);
        w_ = dnnl::memory(w_md, engine, DNNL_MEMORY_NONE);
        w_t_ = dnnl::memory(w_t_md, engine, DNNL_MEMORY_NONE);
        y_t_ = dnnl::memory(y_t_md, engine, DNNL_MEMORY_NONE);
        bias_ = dnnl::memory(bias_md, engine, DNNL_MEMORY_NONE);
    }

    static dnnl::memory& bind(dnnl::memory& memory, const Tensor& t) {
        memory.set_data_handle(t.raw());
        return memory;
    }

    CpuDevice& device_;
    LinearConfig config_;
    dnnl::matmul forward_, backward_data_, backward_weights_;
    dnnl::memory x_, y_, w_, w_t_, y_t_, bias_;
};

}  // namespace

std::unique_ptr<LinearKernel> make_linear_dnnl(Device& device, const LinearConfig& config) {
    return std::make_unique<LinearDnnl>(device, config);
}

}  // namespace tandem::cpu
