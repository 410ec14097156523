// Layer: the unit a net is made of (Conv2d, BatchNorm2d, ReLU, a residual block, ...).
//
// Contract, for every layer:
//  - output_shape() is pure (no device, no allocation) and throws ShapeError naming the layer,
//    what it expected and what it got.
//  - forward(x) returns y in x's layout, allocated on the pass's device. In training mode it
//    keeps what backward needs in pass.saved, never in the layer: several micro-batches may be
//    in flight through one layer at once.
//  - backward(x, dy) returns dx and ADDS dL/dparameter into each parameter's grad (never
//    overwrites), so gradients accumulate over micro-batches with no extra code.
//  - Kernels are built once per (device, input shape, layout) and cached; bind() builds them
//    ahead of time, forward() builds on a miss.
// A layer does not know which thread calls it; the engine keeps each layer on one worker.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "device/precision.h"
#include "layers/pass.h"
#include "tensor/tensor.h"

namespace tandem {

// A trainable tensor (or, for buffers such as running statistics, a saved untrained one).
struct Parameter {
    std::string name;  // "weight", "bias", "running_mean"
    Tensor value;
    Tensor grad;        // same shape as value; undefined for buffers
    bool decay = true;  // whether weight decay applies (not to biases or batch-norm affine)
};

// Bytes a layer needs for one input shape: what a partitioner weighs.
struct MemoryEstimate {
    std::size_t parameter_bytes = 0;  // weights (gradients and optimizer state scale with it)
    std::size_t output_bytes = 0;     // the activation it produces
    std::size_t saved_bytes = 0;      // what it keeps for backward besides its input
};

class Layer;
using LayerPtr = std::shared_ptr<Layer>;

class Layer {
public:
    Layer() = default;
    virtual ~Layer() = default;
    Layer(const Layer&) = delete;
    Layer& operator=(const Layer&) = delete;

    virtual std::string_view kind() const = 0;         // "Conv2d"
    const std::string& name() const { return name_; }  // "conv3"; set by the container
    void set_name(std::string name) { name_ = std::move(name); }
    // "'conv3' (Conv2d)": how messages refer to the layer.
    std::string label() const;

    virtual Shape output_shape(const Shape& input) const = 0;
    virtual MemoryEstimate memory_estimate(const Shape& input) const;
    // Floating-point operations of one forward over `input` (multiply-adds count two);
    // layers whose cost is negligible next to convolutions and products return 0.
    virtual double forward_flops(const Shape& input) const;

    virtual Tensor forward(const Tensor& x, Pass& pass) = 0;
    virtual Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) = 0;

    // Forward and backward of several micro-batches together, one pass each: what synchronised
    // batch norm needs, its statistics spanning every micro-batch. Containers run them layer
    // by layer across the micro-batches; other layers run forward (backward) on each in turn.
    virtual std::vector<Tensor> forward_many(const std::vector<Tensor>& xs,
                                             const std::vector<Pass*>& passes);
    virtual std::vector<Tensor> backward_many(const std::vector<Tensor>& xs,
                                              const std::vector<Tensor>& dys,
                                              const std::vector<Pass*>& passes);

    // A ReLU right after this layer, applied in this layer's own pass over memory. A container
    // holding the pair (Sequential, GraphPart: the ReLU reads this layer's output and nothing
    // else does) asks takes_relu(pass); when it says yes, the container runs forward_relu and
    // backward_relu in place of both layers' forward and backward, and the ReLU not at all. For
    // one pass the answer is the same in forward and backward. A layer run alone never fuses.
    virtual bool takes_relu(const Pass& pass) const;
    virtual Tensor forward_relu(const Tensor& x, Pass& pass);
    virtual Tensor backward_relu(const Tensor& x, const Tensor& dy, Pass& pass);

    // This layer's own parameters and buffers (not its children's).
    virtual std::vector<Parameter*> parameters() { return {}; }
    virtual std::vector<Parameter*> buffers() { return {}; }
    // Sub-layers, for containers and blocks.
    virtual std::vector<Layer*> children() { return {}; }

    // A layer belongs to one net: the container holding it (null at the top). Sharing a layer
    // between two nets would tie their weights and names together, so a container refuses a
    // layer another one holds (clone() makes a separate copy).
    const Layer* container() const { return container_; }
    // Whether an engine trains the net this layer is in: its containers then take no new
    // layers (the engine placed the net as it was) and no other engine takes it.
    bool in_engine() const { return in_engine_; }
    // The engine's claim on the whole tree under `root`, and its release (Engine).
    static void claim_for_engine(Layer& root);
    static void release_from_engine(Layer& root) noexcept;

    // A new layer with the same options, name and kernel choice whose parameters and buffers
    // hold copies of this layer's values, on the host device: a worker group's replica.
    virtual LayerPtr clone() const = 0;

    // Moves parameters, gradients and buffers (and those of children) to `device`.
    void to(Device& device);
    // Builds kernels for `input` on `device` ahead of the first forward (and checks shapes).
    void bind(Device& device, const Shape& input, Layout layout);
    // Draws parameters afresh from `seed` (the same seed gives the same values everywhere).
    virtual void initialize(std::uint64_t seed) { (void)seed; }
    // Picks a kernel implementation by name ("reference", "dnnl"); empty for the default.
    void set_kernel_impl(const std::string& impl);
    const std::string& kernel_impl() const { return kernel_impl_; }
    // What this layer's (and its children's) convolutions and matrix products compute in
    // (device/precision.h); layers without such products compute in float32 whatever it says.
    // The engine's `precision` option sets it on the whole net.
    void set_precision(Precision precision);
    Precision precision() const { return precision_; }
    // One-line description of the options: "3->16, 3x3, stride 1, pad 1".
    virtual std::string options_text() const { return {}; }

protected:
    virtual void on_bind(Device& device, const Shape& input, Layout layout);
    // A parameter of `shape` on the host device, zero gradient.
    static Parameter make_parameter(std::string name, const Shape& shape, bool decay);
    static Parameter make_buffer(std::string name, const Shape& shape, float value);
    // Gives `copy` (a fresh layer of the same kind and options) this layer's name, kernel
    // choice, parameter and buffer values; returns it. clone()'s common part.
    LayerPtr finish_clone(LayerPtr copy) const;
    // Containers: take `child` (ConfigError naming it when another container holds it, or when
    // an engine trains this net), and let it go when the container ends.
    void adopt(Layer& child);
    void let_go(Layer& child) noexcept;

private:
    std::string name_;
    std::string kernel_impl_;
    Precision precision_ = Precision::fp32;
    const Layer* container_ = nullptr;
    bool in_engine_ = false;
};

// Every parameter (or buffer) under `root` with a dotted name: "block2.body.conv1.weight".
struct NamedParameter {
    std::string name;
    Parameter* parameter;
};
std::vector<NamedParameter> named_parameters(Layer& root);
std::vector<NamedParameter> named_buffers(Layer& root);
std::int64_t parameter_count(Layer& root);
// Whether `target` is `root` or somewhere under it: how containers refuse a net that would
// contain itself.
bool contains_layer(Layer& root, const Layer* target);
// The bytes of each parameter tensor under `root`, in named_parameters' order: what gradient
// buckets are made of (the engine's and the planner's, parallel/program.h).
std::vector<std::size_t> parameter_tensor_bytes(Layer& root);

// The device that holds parameters before a layer is moved to its device.
Device& host_device();

}  // namespace tandem
