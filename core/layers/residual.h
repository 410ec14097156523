// Residual: y = body(x) + shortcut(x), the building block of ResNets.
//
// The shortcut is the identity (null) or a projection (a Sequential, typically a strided 1x1
// convolution and batch norm) when the body changes the shape. The children are named "body"
// and "shortcut", so parameters read "block1.body.conv1.weight". Backward runs both branches
// on dy and sums their input gradients: dx = body'(dy) + (shortcut ? shortcut'(dy) : dy).
// Errors from inside a branch gain a line "in body of 'block3' (Residual)".
//
// A ReLU right after the block (Layer::takes_relu) is applied by the add, in its pass over
// memory: y = max(0, body(x) + shortcut(x)); its backward masks dy by y > 0 (the ReLU's own
// kernel, reading y as the ReLU layer does) before the branches run.
#pragma once

#include <memory>

#include "kernels/kernel_cache.h"
#include "kernels/kernels.h"
#include "layers/merge.h"
#include "layers/sequential.h"

namespace tandem {

class Residual final : public Layer {
public:
    // Throws ConfigError when body is null or the shortcut is the body itself.
    Residual(std::shared_ptr<Sequential> body, std::shared_ptr<Sequential> shortcut);
    ~Residual() override;

    Sequential& body() { return *body_; }
    // Null for the identity shortcut.
    Sequential* shortcut() { return shortcut_.get(); }
    // The add of the two branches as a layer of its own, named "add" (no parameters, not a
    // child): what a pipeline stage runs when a cut opens the block (parallel/unit_placement.h),
    // adding as forward() does, the body's output first.
    Add& join() { return *join_; }

    std::string_view kind() const override { return "Residual"; }
    LayerPtr clone() const override;
    // Throws ShapeError naming the block and both shapes when the branches disagree.
    Shape output_shape(const Shape& input) const override;
    MemoryEstimate memory_estimate(const Shape& input) const override;
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;
    // Every mode but on the reference kernels (which fuse nothing: they check the others).
    bool takes_relu(const Pass& pass) const override;
    Tensor forward_relu(const Tensor& x, Pass& pass) override;
    Tensor backward_relu(const Tensor& x, const Tensor& dy, Pass& pass) override;

    std::vector<Tensor> forward_many(const std::vector<Tensor>& xs,
                                     const std::vector<Pass*>& passes) override;
    std::vector<Tensor> backward_many(const std::vector<Tensor>& xs, const std::vector<Tensor>& dys,
                                      const std::vector<Pass*>& passes) override;
    std::vector<Layer*> children() override;
    // Each child from rng_key(seed, its name), as Sequential does.
    void initialize(std::uint64_t seed) override;
    // "identity shortcut" or "projection shortcut".
    std::string options_text() const override;

protected:
    void on_bind(Device& device, const Shape& input, Layout layout) override;

private:
    // Runs f() and adds "in <branch> of <label>" to any Error passing through.
    template <class F>
    auto in_branch(const char* branch, F&& f) const -> decltype(f());
    void check_same(const Shape& body, const Shape& shortcut) const;
    // body(x) + shortcut(x), into a new tensor by `add` (TensorOpsKernel::add or add_relu).
    template <class Add>
    Tensor forward_and(const Tensor& x, Pass& pass, Add&& add);

    std::shared_ptr<Sequential> body_;
    std::shared_ptr<Sequential> shortcut_;
    std::shared_ptr<Add> join_ = std::make_shared<Add>();
    KernelCache<ActivationKernel> relu_kernels_;  // the fused ReLU's backward
};

}  // namespace tandem
