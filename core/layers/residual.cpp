#include "layers/residual.h"

#include "base/rng.h"
#include "device/device.h"
#include "kernels/kernel_cache.h"

namespace tandem {

Residual::Residual(std::shared_ptr<Sequential> body, std::shared_ptr<Sequential> shortcut)
    : body_(std::move(body)), shortcut_(std::move(shortcut)) {
    TANDEM_CHECK_AS(ConfigError, body_ != nullptr) << "Residual: the body cannot be null";
    TANDEM_CHECK_AS(ConfigError, body_ != shortcut_)
        << "Residual: the shortcut cannot be the body itself (build another Sequential)";
    adopt(*body_);
    if (shortcut_) {
        try {
            adopt(*shortcut_);
        } catch (...) {
            let_go(*body_);
            throw;
        }
    }
    body_->set_name("body");
    if (shortcut_) shortcut_->set_name("shortcut");
    join_->set_name("add");
}

Residual::~Residual() {
    let_go(*body_);
    if (shortcut_) let_go(*shortcut_);
}

LayerPtr Residual::clone() const {
    auto body = std::static_pointer_cast<Sequential>(body_->clone());
    auto shortcut = shortcut_ ? std::static_pointer_cast<Sequential>(shortcut_->clone()) : nullptr;
    return finish_clone(std::make_shared<Residual>(std::move(body), std::move(shortcut)));
}

template <class F>
auto Residual::in_branch(const char* branch, F&& f) const -> decltype(f()) {
    try {
        return f();
    } catch (Error& e) {
        e.add_context(std::string("in ") + branch + " of " + label());
        throw;
    }
}

void Residual::check_same(const Shape& body, const Shape& shortcut) const {
    TANDEM_CHECK_AS(ShapeError, body == shortcut)
        << label() << ": the body's output " << body.to_string() << " and the "
        << (shortcut_ ? "shortcut's output " : "identity shortcut ") << shortcut.to_string()
        << " differ; they must have the same shape to be added";
}

Shape Residual::output_shape(const Shape& input) const {
    const Shape body = in_branch("body", [&] { return body_->output_shape(input); });
    const Shape shortcut =
        shortcut_ ? in_branch("shortcut", [&] { return shortcut_->output_shape(input); }) : input;
    check_same(body, shortcut);
    return body;
}

MemoryEstimate Residual::memory_estimate(const Shape& input) const {
    // The branch outputs are temporaries freed after the add; what stays for backward is what
    // each branch keeps (its layers' inputs and saved state).
    MemoryEstimate e;
    const MemoryEstimate body = body_->memory_estimate(input);
    e.parameter_bytes = body.parameter_bytes;
    e.saved_bytes = body.saved_bytes;
    if (shortcut_) {
        const MemoryEstimate shortcut = shortcut_->memory_estimate(input);
        e.parameter_bytes += shortcut.parameter_bytes;
        e.saved_bytes += shortcut.saved_bytes;
    }
    e.output_bytes = static_cast<std::size_t>(output_shape(input).numel()) * sizeof(float);
    return e;
}

template <class Add>
Tensor Residual::forward_and(const Tensor& x, Pass& pass, Add&& add) {
    const Tensor body = in_branch("body", [&] { return body_->forward(x, pass); });
    Tensor shortcut =
        shortcut_ ? in_branch("shortcut", [&] { return shortcut_->forward(x, pass); }) : x;
    check_same(body.shape(), shortcut.shape());
    shortcut = in_layout(shortcut, body.layout(), pass.device);
    Tensor y = Tensor::empty(body.shape(), pass.device, DType::f32, body.layout());
    add(tensor_ops(pass.device), body, shortcut, y);
    return y;
}

Tensor Residual::forward(const Tensor& x, Pass& pass) {
    return forward_and(x, pass,
                       [](TensorOpsKernel& ops, const Tensor& a, const Tensor& b, Tensor& y) {
                           ops.add(a, b, y);
                       });
}

bool Residual::takes_relu(const Pass&) const {
    return kernel_impl() != "reference";
}

Tensor Residual::forward_relu(const Tensor& x, Pass& pass) {
    Tensor y =
        forward_and(x, pass, [](TensorOpsKernel& ops, const Tensor& a, const Tensor& b, Tensor& y) {
            ops.add_relu(a, b, y);
        });
    if (pass.mode == Mode::train) pass.saved.put(this, {y});
    return y;
}

Tensor Residual::backward_relu(const Tensor& x, const Tensor& dy_in, Pass& pass) {
    const std::vector<Tensor>& saved = pass.saved.get(this);
    TANDEM_CHECK(saved.size() == 1)
        << label() << ": backward with the ReLU after a forward without";
    const Tensor& y = saved[0];
    const Tensor dy = dy_in.to_layout(y.layout());
    Tensor masked = Tensor::empty(y.shape(), pass.device, DType::f32, y.layout());
    relu_kernels_
        .get(pass.device, ActivationConfig{y.shape(), y.layout(), ActivationAlgorithm::relu, 0.f},
             kernel_impl())
        .backward(y, dy, masked);
    return backward(x, masked, pass);
}

Tensor Residual::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    NeedDx need(pass, true);  // both branches' dx are summed below
    const Tensor from_body = in_branch("body", [&] { return body_->backward(x, dy, pass); });
    const Tensor from_shortcut =
        shortcut_ ? in_branch("shortcut", [&] { return shortcut_->backward(x, dy, pass); }) : dy;
    // A fresh dx: either term may be dy itself (an identity layer returns its gradient as is).
    Tensor dx = Tensor::empty(x.shape(), pass.device, DType::f32, x.layout());
    tensor_ops(pass.device)
        .add(in_layout(from_body, x.layout(), pass.device),
             in_layout(from_shortcut, x.layout(), pass.device), dx);
    return dx;
}

std::vector<Tensor> Residual::forward_many(const std::vector<Tensor>& xs,
                                           const std::vector<Pass*>& passes) {
    const auto body = in_branch("body", [&] { return body_->forward_many(xs, passes); });
    const auto shortcut =
        shortcut_ ? in_branch("shortcut", [&] { return shortcut_->forward_many(xs, passes); }) : xs;
    std::vector<Tensor> ys;
    for (std::size_t m = 0; m < xs.size(); ++m) {
        Device& device = passes[m]->device;
        check_same(body[m].shape(), shortcut[m].shape());
        Tensor y = Tensor::empty(body[m].shape(), device, DType::f32, body[m].layout());
        tensor_ops(device).add(body[m], in_layout(shortcut[m], body[m].layout(), device), y);
        ys.push_back(std::move(y));
    }
    return ys;
}

std::vector<Tensor> Residual::backward_many(const std::vector<Tensor>& xs,
                                            const std::vector<Tensor>& dys,
                                            const std::vector<Pass*>& passes) {
    std::vector<std::unique_ptr<NeedDx>> need;  // both branches' dx are summed below
    for (Pass* pass : passes) need.push_back(std::make_unique<NeedDx>(*pass, true));
    const auto body = in_branch("body", [&] { return body_->backward_many(xs, dys, passes); });
    const auto shortcut =
        shortcut_ ? in_branch("shortcut", [&] { return shortcut_->backward_many(xs, dys, passes); })
                  : dys;
    std::vector<Tensor> dxs;
    for (std::size_t m = 0; m < xs.size(); ++m) {
        Device& device = passes[m]->device;
        Tensor dx = Tensor::empty(xs[m].shape(), device, DType::f32, xs[m].layout());
        tensor_ops(device).add(in_layout(body[m], xs[m].layout(), device),
                               in_layout(shortcut[m], xs[m].layout(), device), dx);
        dxs.push_back(std::move(dx));
    }
    return dxs;
}

std::vector<Layer*> Residual::children() {
    std::vector<Layer*> out{body_.get()};
    if (shortcut_) out.push_back(shortcut_.get());
    return out;
}

void Residual::initialize(std::uint64_t seed) {
    for (Layer* child : children()) child->initialize(rng_key(seed, child->name()));
}

std::string Residual::options_text() const {
    return shortcut_ ? "projection shortcut" : "identity shortcut";
}

void Residual::on_bind(Device& device, const Shape& input, Layout layout) {
    in_branch("body", [&] { body_->bind(device, input, layout); });
    if (shortcut_) in_branch("shortcut", [&] { shortcut_->bind(device, input, layout); });
}

}  // namespace tandem
