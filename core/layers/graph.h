// Graph: a net whose layers form a directed acyclic graph of named nodes (an Inception block,
// a model with several branches joined by Concat or Add, a net with two inputs).
//
// A graph has named inputs, nodes (a layer fed by the outputs of inputs or earlier nodes; a
// Merge (merge.h) takes several, every other layer one) and outputs (nodes, or inputs, whose
// values it returns). Names of inputs and nodes share one namespace; a node is named after
// its layer, by kind and position when the layer has no name ("conv1", "concat1"), so its
// parameters read "<graph>.<node>.weight". Nodes are kept in an order where each comes after
// its inputs, so forward runs them in that order and backward in reverse, adding the gradients
// of a value that feeds several nodes.
//
// With one input and one output a graph is a Layer like any other (inside a Sequential, or a
// whole net); with several, forward_graph / backward_graph take and return one tensor each.
// Errors passing through a node gain "in node 'x' (Conv2d) of graph 'g' ...".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "layers/graph_part.h"
#include "layers/layer.h"

namespace tandem {

class Merge;

class Graph final : public Layer {
public:
    Graph() = default;
    ~Graph() override;

    std::string_view kind() const override { return "Graph"; }
    LayerPtr clone() const override;
    std::string options_text() const override;

    // Declares an input named `name`; inputs come in the order declared. ConfigError when the
    // name is taken, or when an engine trains the graph.
    void add_input(const std::string& name);
    // Adds `layer` as a node fed by `inputs` (names of the graph's inputs or nodes), naming it
    // when unnamed; returns its name. ConfigError naming the node when an input is unknown, the
    // number of inputs does not suit the layer, the name is taken or the layer is in another net.
    std::string add(LayerPtr layer, const std::vector<std::string>& inputs);
    // The values the graph returns, in order: names of nodes or inputs, each once.
    void set_outputs(const std::vector<std::string>& names);

    // A whole graph at once, its nodes in any order (sorted so that each comes after its
    // inputs). ConfigError naming the nodes of a cycle, or a node fed by an unknown name.
    struct NodeSpec {
        LayerPtr layer;  // named when other nodes refer to it
        std::vector<std::string> inputs;
    };
    static std::shared_ptr<Graph> build(const std::vector<std::string>& inputs,
                                        std::vector<NodeSpec> nodes,
                                        const std::vector<std::string>& outputs);

    const std::vector<std::string>& input_names() const { return input_names_; }
    std::vector<std::string> output_names() const;
    std::size_t node_count() const { return nodes_.size(); }
    Layer& node(std::size_t i) const { return *nodes_.at(i).layer; }
    // The names feeding node i, in order.
    std::vector<std::string> node_input_names(std::size_t i) const;

    // ConfigError unless the graph can run: an input, an output, and every input and node
    // leading to an output (a node that does not would train nothing: a mistake).
    void check_complete() const;
    // The shape of every input and node's value (inputs first, then nodes in order).
    std::vector<Shape> value_shapes(const std::vector<Shape>& inputs) const;
    std::vector<Shape> output_shapes(const std::vector<Shape>& inputs) const;
    // The indices into value_shapes of node i's inputs.
    std::vector<std::size_t> node_input_values(std::size_t i) const { return nodes_.at(i).inputs; }
    // The indices into value_shapes of the outputs, in order.
    const std::vector<std::size_t>& output_values() const { return outputs_; }

    // One tensor per input in, one per output out.
    std::vector<Tensor> forward_graph(const std::vector<Tensor>& xs, Pass& pass);
    // One gradient per output (an undefined one: nothing flows back from that output); returns
    // one per input (undefined where no gradient reaches, or where pass.need_dx is false).
    std::vector<Tensor> backward_graph(const std::vector<Tensor>& dys, Pass& pass);
    void bind_graph(Device& device, const std::vector<Shape>& inputs, Layout layout);

    // The Layer interface: a graph of one input and one output (ConfigError otherwise).
    Shape output_shape(const Shape& input) const override;
    MemoryEstimate memory_estimate(const Shape& input) const override;
    double forward_flops(const Shape& input) const override;
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;
    std::vector<Tensor> forward_many(const std::vector<Tensor>& xs,
                                     const std::vector<Pass*>& passes) override;
    std::vector<Tensor> backward_many(const std::vector<Tensor>& xs, const std::vector<Tensor>& dys,
                                      const std::vector<Pass*>& passes) override;

    std::vector<Layer*> children() override;
    void initialize(std::uint64_t seed) override;

protected:
    void on_bind(Device& device, const Shape& input, Layout layout) override;

private:
    struct Node {
        LayerPtr layer;
        Merge* merge = nullptr;           // the layer as a Merge, when it is one
        std::vector<std::size_t> inputs;  // value indices: inputs first, then nodes
    };
    // Per micro-batch, one tensor per value (inputs, then nodes).
    using Values = std::vector<Tensor>;

    // The shapes of `node`'s inputs among every value's.
    static std::vector<Shape> node_shapes(const Node& node, const std::vector<Shape>& values);
    // "'a', 'b'" (or "none"), for messages.
    static std::string quoted_list(const std::vector<std::string>& names);
    std::size_t value_index(const std::string& name, const std::string& node) const;
    bool taken(const std::string& name) const;
    void check_not_in_engine() const;
    void check_one_in_one_out(const char* what) const;
    // The nodes as a GraphPart over the values (inputs, then nodes): the one loop that runs
    // them, which pipeline stages holding part of a graph run too. Built for each run, so its
    // messages carry the graph's name as it is then.
    GraphPart as_part() const;
    // Forward of every micro-batch (inputs[m] has one tensor per graph input); `together`
    // runs each layer over all micro-batches at once (forward_many).
    std::vector<Values> run_forward(const std::vector<std::vector<Tensor>>& inputs,
                                    const std::vector<Pass*>& passes, bool together);
    // dys[m] has one gradient per output; returns one per input for each micro-batch.
    std::vector<std::vector<Tensor>> run_backward(const std::vector<std::vector<Tensor>>& dys,
                                                  const std::vector<Pass*>& passes, bool together);

    std::vector<std::string> input_names_;
    std::vector<Node> nodes_;
    std::vector<std::size_t> outputs_;  // value indices
};

}  // namespace tandem
