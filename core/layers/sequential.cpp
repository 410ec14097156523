#include "layers/sequential.h"

#include <map>

#include "base/rng.h"
#include "device/device.h"
#include "layers/activation.h"

namespace tandem {

std::string default_name_prefix(std::string_view kind) {
    static const std::map<std::string_view, std::string> kPrefixes = {
        {"Conv2d", "conv"},     {"BatchNorm2d", "bn"}, {"ReLU", "relu"},
        {"MaxPool2d", "pool"},  {"AvgPool2d", "pool"}, {"GlobalAvgPool2d", "gap"},
        {"LRN", "lrn"},         {"Linear", "fc"},      {"Dropout", "drop"},
        {"Flatten", "flatten"}, {"Residual", "block"}, {"Sequential", "seq"},
    };
    auto it = kPrefixes.find(kind);
    if (it != kPrefixes.end()) return it->second;
    std::string prefix;
    for (char c : kind) prefix += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return prefix;
}

Sequential::Sequential(std::vector<LayerPtr> layers) {
    try {
        for (auto& layer : layers) add(std::move(layer));
    } catch (...) {
        for (auto& layer : layers_)
            let_go(*layer);  // the half-built container lets go of its layers
        throw;
    }
}

Sequential::~Sequential() {
    for (auto& layer : layers_) let_go(*layer);
}

void Sequential::add(LayerPtr layer) {
    TANDEM_CHECK_AS(ConfigError, layer != nullptr) << "Sequential: cannot add a null layer";
    TANDEM_CHECK_AS(ConfigError, layer.get() != this) << "Sequential: cannot contain itself";
    for (const auto& existing : layers_)
        TANDEM_CHECK_AS(ConfigError, existing != layer)
            << "Sequential: layer " << layer->label()
            << " is already in this container (a layer can appear once; build another)";
    auto taken = [&](const std::string& n) {
        for (const auto& e : layers_)
            if (e->name() == n) return true;
        return false;
    };
    // Every check comes before any change: a refused layer stays as it was.
    std::string name = layer->name();
    if (name.empty()) {
        const std::string prefix = default_name_prefix(layer->kind());
        int count = 1;
        for (const auto& existing : layers_)
            if (default_name_prefix(existing->kind()) == prefix) ++count;
        name = prefix + std::to_string(count);
        while (taken(name)) name = prefix + std::to_string(++count);
    } else {
        TANDEM_CHECK_AS(ConfigError, !taken(name))
            << "Sequential: two layers are named '" << name << "'";
    }
    adopt(*layer);
    layer->set_name(std::move(name));
    layers_.push_back(std::move(layer));
}

Layer& Sequential::at(std::size_t i) const {
    TANDEM_CHECK(i < layers_.size())
        << "layer index " << i << " out of range (" << layers_.size() << " layers)";
    return *layers_[i];
}

std::string Sequential::context(std::size_t i, const Pass& pass, const char* direction) const {
    return "in layer " + std::to_string(i + 1) + " " + layers_[i]->label() + " on " +
           pass.device.name() + ", micro-batch " + std::to_string(pass.micro_batch) + ", " +
           direction;
}

std::vector<Shape> Sequential::output_shapes(const Shape& input) const {
    std::vector<Shape> shapes;
    Shape shape = input;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
        try {
            shape = layers_[i]->output_shape(shape);
        } catch (Error& e) {
            e.add_context("in layer " + std::to_string(i + 1) + " " + layers_[i]->label() +
                          ", input " + shape.to_string());
            throw;
        }
        shapes.push_back(shape);
    }
    return shapes;
}

Shape Sequential::output_shape(const Shape& input) const {
    auto shapes = output_shapes(input);
    return shapes.empty() ? input : shapes.back();
}

MemoryEstimate Sequential::memory_estimate(const Shape& input) const {
    MemoryEstimate total;
    Shape shape = input;
    for (const auto& layer : layers_) {
        auto e = layer->memory_estimate(shape);
        total.parameter_bytes += e.parameter_bytes;
        total.saved_bytes += e.saved_bytes + e.output_bytes;  // each output is the next input
        shape = layer->output_shape(shape);
    }
    total.output_bytes = static_cast<std::size_t>(shape.numel()) * sizeof(float);
    return total;
}

double Sequential::forward_flops(const Shape& input) const {
    double total = 0;
    Shape shape = input;
    for (const auto& layer : layers_) {
        total += layer->forward_flops(shape);
        shape = layer->output_shape(shape);
    }
    return total;
}

Tensor Sequential::forward(const Tensor& x, Pass& pass) {
    return forward_range(x, pass, 0, layers_.size());
}

Tensor Sequential::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    (void)x;  // each layer's input was kept by forward
    return backward_range(dy, pass, 0, layers_.size());
}

Tensor Sequential::forward_range(const Tensor& x, Pass& pass, std::size_t begin, std::size_t end) {
    TANDEM_CHECK(begin <= end && end <= layers_.size())
        << "layer range [" << begin << ", " << end << ") outside " << layers_.size() << " layers";
    // inputs[i] is layer (begin + i)'s input, kept for backward in training mode.
    std::vector<Tensor> inputs;
    Tensor h = x;
    for (std::size_t i = begin; i < end; ++i) {
        if (pass.mode == Mode::train) inputs.push_back(h);
        if (relu_taken(i, begin, end, pass)) continue;  // h went through it already
        try {
            h = fuses_relu(i, begin, end, pass) ? layers_[i]->forward_relu(h, pass)
                                                : layers_[i]->forward(h, pass);
        } catch (Error& e) {
            e.add_context(context(i, pass, "forward"));
            throw;
        }
    }
    if (pass.mode == Mode::train) pass.saved.put(this, std::move(inputs), begin);
    return h;
}

bool Sequential::fuses_relu(std::size_t i, std::size_t begin, std::size_t end,
                            const Pass& pass) const {
    return i >= begin && i + 1 < end && is_relu(*layers_[i + 1]) && layers_[i]->takes_relu(pass);
}

Tensor Sequential::backward_range(const Tensor& dy, Pass& pass, std::size_t begin,
                                  std::size_t end) {
    return backward_part(dy, pass, begin, end, begin, end);
}

Tensor Sequential::backward_part(const Tensor& dy, Pass& pass, std::size_t begin, std::size_t end,
                                 std::size_t low, std::size_t high) {
    TANDEM_CHECK(begin <= low && low <= high && high <= end)
        << "backward over layers [" << low << ", " << high << ") outside the forward's [" << begin
        << ", " << end << ")";
    const std::vector<Tensor>& inputs = pass.saved.get(this, begin);
    TANDEM_CHECK(inputs.size() == end - begin)
        << "backward over layers [" << begin << ", " << end << ") after a forward over "
        << inputs.size() << " layers";
    Tensor g = dy;
    for (std::size_t i = high; i-- > low;) {
        const Tensor& x = inputs[i - begin];
        try {
            const Shape expected = layers_[i]->output_shape(x.shape());
            TANDEM_CHECK_AS(ShapeError, g.shape() == expected)
                << "gradient " << g.shape().to_string() << " does not match the output "
                << expected.to_string();
            if (relu_taken(i, begin, end, pass)) continue;  // the layer before masks g
            // Only the forward's first layer may skip dx, and only when our caller skips it.
            NeedDx need(pass, i > begin || pass.need_dx);
            g = fuses_relu(i, begin, end, pass) ? layers_[i]->backward_relu(x, g, pass)
                                                : layers_[i]->backward(x, g, pass);
        } catch (Error& e) {
            e.add_context(context(i, pass, "backward"));
            throw;
        }
    }
    if (low == begin) pass.saved.erase(this, begin);
    return g;
}

std::vector<Tensor> Sequential::forward_many(const std::vector<Tensor>& xs,
                                             const std::vector<Pass*>& passes) {
    return forward_many_range(xs, passes, 0, layers_.size());
}

std::vector<Tensor> Sequential::backward_many(const std::vector<Tensor>& xs,
                                              const std::vector<Tensor>& dys,
                                              const std::vector<Pass*>& passes) {
    (void)xs;  // each layer's inputs were kept by forward_many
    return backward_many_range(dys, passes, 0, layers_.size());
}

std::vector<Tensor> Sequential::forward_many_range(const std::vector<Tensor>& xs,
                                                   const std::vector<Pass*>& passes,
                                                   std::size_t begin, std::size_t end) {
    TANDEM_CHECK(begin <= end && end <= layers_.size() && xs.size() == passes.size() && !xs.empty())
        << "layer range [" << begin << ", " << end << ") outside " << layers_.size()
        << " layers, or " << xs.size() << " inputs for " << passes.size() << " passes";
    const bool train = passes.front()->mode == Mode::train;
    std::vector<std::vector<Tensor>> inputs(xs.size());  // per micro-batch, as forward_range keeps
    std::vector<Tensor> h = xs;
    for (std::size_t i = begin; i < end; ++i) {
        if (train)
            for (std::size_t m = 0; m < h.size(); ++m) inputs[m].push_back(h[m]);
        try {
            h = layers_[i]->forward_many(h, passes);
        } catch (Error& e) {
            e.add_context(context(i, *passes.front(), "forward of micro-batches together"));
            throw;
        }
    }
    if (train)
        for (std::size_t m = 0; m < h.size(); ++m)
            passes[m]->saved.put(this, std::move(inputs[m]), begin);
    return h;
}

std::vector<Tensor> Sequential::backward_many_range(const std::vector<Tensor>& dys,
                                                    const std::vector<Pass*>& passes,
                                                    std::size_t begin, std::size_t end) {
    std::vector<std::vector<Tensor>> inputs;
    for (Pass* pass : passes) {
        inputs.push_back(pass->saved.get(this, begin));
        TANDEM_CHECK(inputs.back().size() == end - begin)
            << "backward over layers [" << begin << ", " << end << ") after a forward over "
            << inputs.back().size() << " layers";
    }
    std::vector<Tensor> g = dys;
    for (std::size_t i = end; i-- > begin;) {
        std::vector<Tensor> xs;
        for (auto& in : inputs) xs.push_back(in[i - begin]);
        try {
            // Only the range's first layer may skip dx, and only when our caller skips it.
            std::vector<std::unique_ptr<NeedDx>> need;
            for (Pass* pass : passes)
                need.push_back(std::make_unique<NeedDx>(*pass, i > begin || pass->need_dx));
            g = layers_[i]->backward_many(xs, g, passes);
        } catch (Error& e) {
            e.add_context(context(i, *passes.front(), "backward of micro-batches together"));
            throw;
        }
    }
    for (Pass* pass : passes) pass->saved.erase(this, begin);
    return g;
}

LayerPtr Sequential::clone() const {
    auto copy = std::make_shared<Sequential>();
    for (const auto& layer : layers_) copy->add(layer->clone());
    return finish_clone(copy);
}

std::vector<Layer*> Sequential::children() {
    std::vector<Layer*> out;
    for (auto& layer : layers_) out.push_back(layer.get());
    return out;
}

void Sequential::initialize(std::uint64_t seed) {
    for (auto& layer : layers_) layer->initialize(rng_key(seed, layer->name()));
}

void Sequential::on_bind(Device& device, const Shape& input, Layout layout) {
    Shape shape = input;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
        // Only images have a channels_last layout; flattened activations are contiguous.
        try {
            layers_[i]->bind(device, shape, shape.rank() == 4 ? layout : Layout::contiguous);
        } catch (Error& e) {
            // As forward and backward say it: which layer could not build its kernels.
            e.add_context("in layer " + std::to_string(i + 1) + " " + layers_[i]->label() + " on " +
                          device.name() + ", bind");
            throw;
        }
        shape = layers_[i]->output_shape(shape);
    }
}

}  // namespace tandem
