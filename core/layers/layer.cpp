#include "layers/layer.h"

#include <algorithm>
#include <functional>

#include "device/cpu/cpu_device.h"
#include "kernels/registry.h"

namespace tandem {

void Layer::adopt(Layer& child) {
    TANDEM_CHECK_AS(ConfigError, !in_engine_)
        << "cannot add " << child.label()
        << ": this net is trained by an engine, which placed it as "
        << "it was when T.Engine was built; add layers before building the engine (or free it "
           "first)";
    TANDEM_CHECK_AS(ConfigError, child.container_ == nullptr || child.container_ == this)
        << "layer " << child.label() << " is already inside " << child.container_->label()
        << "; a layer belongs to one net (layer:clone() makes a separate copy)";
    child.container_ = this;
}

void Layer::let_go(Layer& child) noexcept {
    if (child.container_ == this) child.container_ = nullptr;
}

namespace {

bool any_in_engine(Layer& root) {
    if (root.in_engine()) return true;
    for (Layer* child : root.children())
        if (any_in_engine(*child)) return true;
    return false;
}

}  // namespace

void Layer::claim_for_engine(Layer& root) {
    TANDEM_CHECK_AS(ConfigError, !any_in_engine(root))
        << "this net (or a layer in it) is already trained by another engine (engine:free() that "
           "one "
        << "first, or build another net): two engines would move and update the same weights";
    std::vector<Layer*> todo{&root};
    while (!todo.empty()) {
        Layer* layer = todo.back();
        todo.pop_back();
        layer->in_engine_ = true;
        for (Layer* child : layer->children()) todo.push_back(child);
    }
}

void Layer::release_from_engine(Layer& root) noexcept {
    root.in_engine_ = false;
    for (Layer* child : root.children()) release_from_engine(*child);
}

std::string Layer::label() const {
    // A layer outside any container has no name yet: its kind says enough.
    if (name_.empty()) return std::string(kind());
    return "'" + name_ + "' (" + std::string(kind()) + ")";
}

MemoryEstimate Layer::memory_estimate(const Shape& input) const {
    MemoryEstimate e;
    e.output_bytes = static_cast<std::size_t>(output_shape(input).numel()) * sizeof(float);
    auto* self = const_cast<Layer*>(this);
    for (auto* p : self->parameters()) e.parameter_bytes += p->value.nbytes();
    for (auto* child : self->children())
        e.parameter_bytes += child->memory_estimate(input).parameter_bytes;
    return e;
}

double Layer::forward_flops(const Shape& input) const {
    double total = 0;
    for (auto* child : const_cast<Layer*>(this)->children()) total += child->forward_flops(input);
    return total;
}

void Layer::to(Device& device) {
    for (auto* p : parameters()) {
        if (&p->value.device() != &device) p->value = p->value.to(device);
        if (p->grad.defined() && &p->grad.device() != &device) p->grad = p->grad.to(device);
    }
    for (auto* b : buffers())
        if (&b->value.device() != &device) b->value = b->value.to(device);
    for (auto* child : children()) child->to(device);
}

void Layer::bind(Device& device, const Shape& input, Layout layout) {
    (void)output_shape(input);  // shape errors first, before any kernel is built
    to(device);
    on_bind(device, input, layout);
}

void Layer::on_bind(Device& device, const Shape& input, Layout layout) {
    (void)device, (void)input, (void)layout;
}

void Layer::set_kernel_impl(const std::string& impl) {
    if (!impl.empty()) {
        const auto known = KernelRegistry::instance().implementation_names();
        if (std::find(known.begin(), known.end(), impl) == known.end()) {
            std::string list;
            for (const auto& name : known) list += (list.empty() ? "" : ", ") + name;
            TANDEM_THROW(ConfigError) << "layer " << label() << ": unknown kernel implementation '"
                                      << impl << "' (this build has: " << list << ")";
        }
    }
    kernel_impl_ = impl;
    for (auto* child : children()) child->set_kernel_impl(impl);
}

void Layer::set_precision(Precision precision) {
    precision_ = precision;
    for (auto* child : children()) child->set_precision(precision);
}

std::vector<Tensor> Layer::forward_many(const std::vector<Tensor>& xs,
                                        const std::vector<Pass*>& passes) {
    std::vector<Tensor> ys;
    for (std::size_t m = 0; m < xs.size(); ++m) ys.push_back(forward(xs[m], *passes[m]));
    return ys;
}

std::vector<Tensor> Layer::backward_many(const std::vector<Tensor>& xs,
                                         const std::vector<Tensor>& dys,
                                         const std::vector<Pass*>& passes) {
    std::vector<Tensor> dxs;
    for (std::size_t m = 0; m < xs.size(); ++m) dxs.push_back(backward(xs[m], dys[m], *passes[m]));
    return dxs;
}

bool Layer::takes_relu(const Pass& pass) const {
    (void)pass;
    return false;
}

Tensor Layer::forward_relu(const Tensor& x, Pass& pass) {
    (void)x, (void)pass;
    TANDEM_THROW(Error) << label() << " cannot apply the ReLU after it (takes_relu is false)";
}

Tensor Layer::backward_relu(const Tensor& x, const Tensor& dy, Pass& pass) {
    (void)x, (void)dy, (void)pass;
    TANDEM_THROW(Error) << label() << " cannot apply the ReLU after it (takes_relu is false)";
}

LayerPtr Layer::finish_clone(LayerPtr copy) const {
    copy->name_ = name_;
    copy->kernel_impl_ = kernel_impl_;
    copy->precision_ = precision_;
    // parameters() is not const (it hands out pointers to train through); reading values
    // through it changes nothing.
    auto& self = const_cast<Layer&>(*this);
    auto copy_values = [&](std::vector<Parameter*> from, std::vector<Parameter*> to) {
        TANDEM_CHECK(from.size() == to.size()) << label() << ": the clone has " << to.size()
                                               << " tensors, the original " << from.size();
        for (std::size_t i = 0; i < from.size(); ++i) {
            to[i]->value = from[i]->value.to(host_device());
            if (from[i]->grad.defined())
                to[i]->grad = Tensor::zeros(from[i]->value.shape(), host_device());
        }
    };
    copy_values(self.parameters(), copy->parameters());
    copy_values(self.buffers(), copy->buffers());
    return copy;
}

Parameter Layer::make_parameter(std::string name, const Shape& shape, bool decay) {
    return Parameter{std::move(name), Tensor::zeros(shape, host_device()),
                     Tensor::zeros(shape, host_device()), decay};
}

Parameter Layer::make_buffer(std::string name, const Shape& shape, float value) {
    Parameter b{std::move(name), Tensor::empty(shape, host_device()), Tensor(), false};
    b.value.fill(value);
    return b;
}

namespace {

void collect(Layer& layer, const std::string& prefix, bool buffers,
             std::vector<NamedParameter>& out) {
    for (auto* p : buffers ? layer.buffers() : layer.parameters())
        out.push_back({prefix + p->name, p});
    for (auto* child : layer.children())
        collect(*child, prefix + child->name() + ".", buffers, out);
}

}  // namespace

std::vector<NamedParameter> named_parameters(Layer& root) {
    std::vector<NamedParameter> out;
    collect(root, "", false, out);
    return out;
}

std::vector<NamedParameter> named_buffers(Layer& root) {
    std::vector<NamedParameter> out;
    collect(root, "", true, out);
    return out;
}

std::vector<std::size_t> parameter_tensor_bytes(Layer& root) {
    std::vector<std::size_t> bytes;
    for (const auto& np : named_parameters(root)) bytes.push_back(np.parameter->value.nbytes());
    return bytes;
}

bool contains_layer(Layer& root, const Layer* target) {
    if (&root == target) return true;
    for (Layer* child : root.children())
        if (contains_layer(*child, target)) return true;
    return false;
}

std::int64_t parameter_count(Layer& root) {
    std::int64_t n = 0;
    for (auto& p : named_parameters(root)) n += p.parameter->value.numel();
    return n;
}

Device& host_device() {
    static CpuDevice host(-1, CpuDeviceOptions{});
    return host;
}

}  // namespace tandem
