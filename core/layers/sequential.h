// Sequential: layers applied one after another. The top-level net is a Sequential, and its
// top-level entries are where a net may be cut into pipeline stages.
//
// Unnamed layers are named by kind and position ("conv1", "bn2", "fc1"); names are unique
// within a container, and every error passing through gets a line naming the layer, its
// position, the device, the micro-batch and the direction.
#pragma once

#include <vector>

#include "layers/layer.h"

namespace tandem {

class Sequential : public Layer {
public:
    Sequential() = default;
    explicit Sequential(std::vector<LayerPtr> layers);
    ~Sequential() override;

    std::string_view kind() const override { return "Sequential"; }
    LayerPtr clone() const override;
    // Appends `layer`, naming it when it has no name; throws ConfigError on a duplicate name.
    void add(LayerPtr layer);
    std::size_t size() const { return layers_.size(); }
    Layer& at(std::size_t i) const;
    const std::vector<LayerPtr>& layers() const { return layers_; }

    Shape output_shape(const Shape& input) const override;
    // Shapes after each layer: entry i is the output of layer i.
    std::vector<Shape> output_shapes(const Shape& input) const;
    MemoryEstimate memory_estimate(const Shape& input) const override;
    double forward_flops(const Shape& input) const override;
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;

    // Layers [begin, end) only: how a pipeline stage runs its slice of the net.
    Tensor forward_range(const Tensor& x, Pass& pass, std::size_t begin, std::size_t end);
    Tensor backward_range(const Tensor& dy, Pass& pass, std::size_t begin, std::size_t end);
    // Part of the backward of a forward_range over [begin, end): layers [low, high), from the
    // gradient of layer high - 1's output (high = end first, then where the previous part
    // stopped). The engine runs a stage's last backward in such parts to all-reduce each
    // gradient bucket as soon as its layers are done. The forward's saved state is released
    // with the part that reaches `begin`.
    Tensor backward_part(const Tensor& dy, Pass& pass, std::size_t begin, std::size_t end,
                         std::size_t low, std::size_t high);

    std::vector<Tensor> forward_many(const std::vector<Tensor>& xs,
                                     const std::vector<Pass*>& passes) override;
    std::vector<Tensor> backward_many(const std::vector<Tensor>& xs, const std::vector<Tensor>& dys,
                                      const std::vector<Pass*>& passes) override;
    // forward_range / backward_range over several micro-batches, layer by layer.
    std::vector<Tensor> forward_many_range(const std::vector<Tensor>& xs,
                                           const std::vector<Pass*>& passes, std::size_t begin,
                                           std::size_t end);
    std::vector<Tensor> backward_many_range(const std::vector<Tensor>& dys,
                                            const std::vector<Pass*>& passes, std::size_t begin,
                                            std::size_t end);

    std::vector<Layer*> children() override;
    void initialize(std::uint64_t seed) override;

protected:
    void on_bind(Device& device, const Shape& input, Layout layout) override;

private:
    std::string context(std::size_t i, const Pass& pass, const char* direction) const;
    // Whether layer i applies the ReLU at i + 1 itself (Layer::takes_relu), both being in the
    // layers [begin, end) one forward ran: a pair split between two calls runs apart.
    bool fuses_relu(std::size_t i, std::size_t begin, std::size_t end, const Pass& pass) const;
    // Whether layer i is a ReLU the layer before it applied.
    bool relu_taken(std::size_t i, std::size_t begin, std::size_t end, const Pass& pass) const {
        return i > begin && fuses_relu(i - 1, begin, end, pass);
    }

    std::vector<LayerPtr> layers_;
};

// The short prefix automatic names use for a layer kind ("Conv2d" -> "conv").
std::string default_name_prefix(std::string_view kind);

}  // namespace tandem
