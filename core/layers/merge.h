// Merge: a layer of several inputs, a node of a Graph (graph.h) that joins branches: Concat
// (concat.h), Add and Mul (below).
//
// merged_shape / merge / unmerge take every input at once. The one-input Layer interface runs
// them on one input when the layer takes one (an LSTM's initial state is optional), and
// refuses otherwise (a join only makes sense where a Graph hands it its inputs). Inputs may come in
// different layouts (a branch may have flattened): a merge converts them to its first
// input's layout, and its output is in that layout. Dimensions in messages count from 1, the
// batch being dimension 1, as the Lua API counts.
#pragma once

#include <cstddef>
#include <limits>

#include "layers/layer.h"

namespace tandem {

class Merge : public Layer {
public:
    // How many inputs it takes.
    virtual std::size_t min_inputs() const { return 2; }
    virtual std::size_t max_inputs() const { return std::numeric_limits<std::size_t>::max(); }
    // Throws ShapeError naming the layer and the shapes when they cannot be merged.
    virtual Shape merged_shape(const std::vector<Shape>& inputs) const = 0;
    virtual Tensor merge(const std::vector<Tensor>& xs, Pass& pass) = 0;
    // The gradient of each input from dy (xs as the forward had them); may share dy's memory.
    virtual std::vector<Tensor> unmerge(const std::vector<Tensor>& xs, const Tensor& dy,
                                        Pass& pass) = 0;

    // Bytes and floating-point operations for these inputs (defaults: the output and its
    // parameters; no flops).
    virtual MemoryEstimate merged_memory(const std::vector<Shape>& inputs) const;
    virtual double merged_flops(const std::vector<Shape>& inputs) const;

    // One input: the merge of {x} when min_inputs() is 1; ConfigError otherwise (a node of an
    // nn.Graph).
    Shape output_shape(const Shape& input) const override;
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;
    MemoryEstimate memory_estimate(const Shape& input) const override;
    double forward_flops(const Shape& input) const override;

    // ConfigError naming the layer unless n inputs are within [min_inputs, max_inputs].
    void check_input_count(std::size_t n) const;

protected:
    // Throws ShapeError unless every shape equals the first.
    void check_same_shapes(const std::vector<Shape>& inputs) const;
    static std::vector<Shape> shapes_of(const std::vector<Tensor>& xs);
    // xs in the first one's layout (copies only those in another).
    static std::vector<Tensor> in_first_layout(const std::vector<Tensor>& xs, Device& device);

private:
    void check_one_input() const;
};

// A graph node's output shape, bytes and FLOPs for its inputs' shapes: a Merge's over all of
// them, any other layer's over its one. What Graph and the planner's units (a graph's nodes)
// both read.
Shape node_output_shape(const Layer& layer, const std::vector<Shape>& inputs);
MemoryEstimate node_memory(const Layer& layer, const std::vector<Shape>& inputs);
double node_flops(const Layer& layer, const std::vector<Shape>& inputs);

// y = x1 + x2 + ...: inputs of one shape (a residual join between branches of a graph).
class Add final : public Merge {
public:
    std::string_view kind() const override { return "Add"; }
    LayerPtr clone() const override { return finish_clone(std::make_shared<Add>()); }
    Shape merged_shape(const std::vector<Shape>& inputs) const override;
    Tensor merge(const std::vector<Tensor>& xs, Pass& pass) override;
    std::vector<Tensor> unmerge(const std::vector<Tensor>& xs, const Tensor& dy,
                                Pass& pass) override;
};

// y = a * b element-wise: two inputs of one shape (a gate, attention weights on features).
class Mul final : public Merge {
public:
    std::string_view kind() const override { return "Mul"; }
    LayerPtr clone() const override { return finish_clone(std::make_shared<Mul>()); }
    std::size_t max_inputs() const override { return 2; }
    Shape merged_shape(const std::vector<Shape>& inputs) const override;
    Tensor merge(const std::vector<Tensor>& xs, Pass& pass) override;
    std::vector<Tensor> unmerge(const std::vector<Tensor>& xs, const Tensor& dy,
                                Pass& pass) override;
};

}  // namespace tandem
