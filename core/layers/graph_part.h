// GraphPart: some nodes of a net's graph of layers, run forward from the values they read and
// backward from the gradients of the values they make: what a pipeline stage holding part of
// an nn.Graph (or a few top-level layers around one) runs (parallel/unit_placement.h).
//
// The nodes and values are numbered by the caller: each node reads some values and makes one,
// a value being made by one node or handed in (an input of the part). forward() runs nodes
// [begin, end) in order, each after the values it reads; backward() runs them in reverse and,
// as Graph's whole backward does, adds up the gradients of a value read by several nodes. The
// values and their gradients live in the caller's vectors (one per micro-batch), so several
// micro-batches can be in flight through the same part. What a layer keeps for its backward
// goes on the pass's tape, as always. A forward that keeps nothing for backward (evaluation,
// or training that recomputes later) lets go of each value the part makes as soon as no later
// node reads it, unless the caller reads it (an output): such a forward holds what a chain's
// would, not every activation.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "layers/layer.h"

namespace tandem {

class Merge;

struct PartNode {
    Layer* layer = nullptr;
    Merge* merge = nullptr;           // the layer as a Merge (several inputs), when it is one
    std::vector<std::size_t> inputs;  // value indices, in the order the layer takes them
    std::size_t output = 0;           // the value it makes
    // Whether backward needs the gradient of its inputs (false when they are the batch's
    // images, which nobody reads the gradient of); none: as the pass says (a node of a Graph
    // reading the graph's input, whose gradient its caller may not need).
    std::optional<bool> need_dx = true;
    std::string where;  // "node 'lstm1' (LSTM) of graph 'g'", for errors
};

// `slot` += `t`, both as `like` is laid out; `slot` may share memory with another value, so a
// new tensor holds the sum. An undefined `t` adds nothing. Graph's backward sums with it too.
void add_in_layout(Tensor& slot, const Tensor& t, const Tensor& like, Device& device);

class GraphPart {
public:
    // `outputs`: the values made here that the caller reads (sends, or the loss reads).
    GraphPart(std::vector<PartNode> nodes, std::vector<std::size_t> outputs);

    std::size_t size() const { return nodes_.size(); }
    const PartNode& node(std::size_t i) const { return nodes_.at(i); }
    // Whether a node of the part reads value v (its backward then needs it).
    bool reads(std::size_t v) const;

    enum class Keep { for_backward, outputs };
    // Nodes [begin, end): values[node.output] from values[node.inputs]. Keep::outputs lets go of
    // the values no later node reads and the caller does not.
    void forward(std::vector<Tensor>& values, Pass& pass, std::size_t begin, std::size_t end,
                 Keep keep = Keep::for_backward);
    // Every micro-batch at once (synchronised batch norm: Layer::forward_many), values[m] each.
    void forward_many(std::vector<std::vector<Tensor>>& values, const std::vector<Pass*>& passes);
    // Nodes [low, high) in reverse: from grads[node.output] (summed over its readers; a node
    // whose output got no gradient is skipped) into grads[node.inputs], added. A node's output
    // gradient is let go once used.
    void backward(const std::vector<Tensor>& values, std::vector<Tensor>& grads, Pass& pass,
                  std::size_t low, std::size_t high);
    void backward_many(const std::vector<std::vector<Tensor>>& values,
                       std::vector<std::vector<Tensor>>& grads, const std::vector<Pass*>& passes);

private:
    std::string context(std::size_t i, const Pass& pass, const char* direction) const;
    void add_input_gradients(const PartNode& node, const std::vector<Tensor>& values,
                             std::vector<Tensor>& grads, const std::vector<Tensor>& dxs,
                             Device& device) const;

    // Whether node i applies the ReLU node that alone reads its output (Layer::takes_relu),
    // and whether node i is a ReLU so applied.
    bool fuses_relu(std::size_t i, const Pass& pass) const {
        return relu_after_[i] != kNone && nodes_[i].layer->takes_relu(pass);
    }
    bool relu_taken(std::size_t i, const Pass& pass) const {
        return relu_of_[i] != kNone && nodes_[relu_of_[i]].layer->takes_relu(pass);
    }

    static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    std::vector<PartNode> nodes_;
    // Per node: the ReLU node after it that it may apply, and the node that may apply it.
    std::vector<std::size_t> relu_after_, relu_of_;
    // Per node, the values made here that nothing reads after it (Keep::outputs).
    std::vector<std::vector<std::size_t>> spent_after_;
    std::vector<std::size_t> read_;  // every value a node reads, sorted (reads(), once a send)
};

}  // namespace tandem
