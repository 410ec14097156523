#include "layers/graph.h"

#include <algorithm>
#include <map>

#include "base/rng.h"
#include "device/device.h"
#include "layers/graph_part.h"
#include "layers/merge.h"
#include "layers/sequential.h"

namespace tandem {

std::string Graph::quoted_list(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
    return out.empty() ? "none" : out;
}

Graph::~Graph() {
    for (auto& node : nodes_) let_go(*node.layer);
}

void Graph::check_not_in_engine() const {
    TANDEM_CHECK_AS(ConfigError, !in_engine())
        << label()
        << " is trained by an engine, which placed it as it was when T.Engine was built; "
        << "change the graph before building the engine (or free it first)";
}

bool Graph::taken(const std::string& name) const {
    if (std::find(input_names_.begin(), input_names_.end(), name) != input_names_.end())
        return true;
    for (const auto& node : nodes_)
        if (node.layer->name() == name) return true;
    return false;
}

std::size_t Graph::value_index(const std::string& name, const std::string& node) const {
    for (std::size_t i = 0; i < input_names_.size(); ++i)
        if (input_names_[i] == name) return i;
    for (std::size_t i = 0; i < nodes_.size(); ++i)
        if (nodes_[i].layer->name() == name) return input_names_.size() + i;
    std::vector<std::string> known = input_names_;
    for (const auto& n : nodes_) known.push_back(n.layer->name());
    TANDEM_THROW(ConfigError) << label() << ": " << node << " takes '" << name
                              << "', which is not an input or a node of the graph (so far: "
                              << quoted_list(known) << ")";
}

void Graph::add_input(const std::string& name) {
    check_not_in_engine();
    TANDEM_CHECK_AS(ConfigError, !name.empty()) << label() << ": an input needs a name";
    TANDEM_CHECK_AS(ConfigError, !taken(name)) << label() << ": the name '" << name << "' is taken";
    input_names_.push_back(name);
}

std::string Graph::add(LayerPtr layer, const std::vector<std::string>& inputs) {
    TANDEM_CHECK_AS(ConfigError, layer != nullptr) << label() << ": cannot add a null layer";
    TANDEM_CHECK_AS(ConfigError, !contains_layer(*layer, this))
        << label() << ": layer " << layer->label()
        << " contains this graph (a net cannot contain itself)";
    check_not_in_engine();
    for (const auto& node : nodes_)
        TANDEM_CHECK_AS(ConfigError, node.layer != layer)
            << label() << ": layer " << layer->label()
            << " is already a node of this graph (a layer appears "
            << "once; layer:clone() makes another)";
    std::string name = layer->name();
    if (name.empty()) {
        const std::string prefix = default_name_prefix(layer->kind());
        int count = 1;
        for (const auto& node : nodes_)
            if (default_name_prefix(node.layer->kind()) == prefix) ++count;
        name = prefix + std::to_string(count);
        while (taken(name)) name = prefix + std::to_string(++count);
    } else {
        TANDEM_CHECK_AS(ConfigError, !taken(name)) << label() << ": two nodes are named '" << name
                                                   << "' (names of inputs and nodes are unique)";
    }
    const std::string what = "node '" + name + "' (" + std::string(layer->kind()) + ")";
    TANDEM_CHECK_AS(ConfigError, !inputs.empty()) << label() << ": " << what << " has no inputs";
    Node node;
    node.merge = dynamic_cast<Merge*>(layer.get());
    if (node.merge != nullptr) {
        try {
            node.merge->check_input_count(inputs.size());
        } catch (Error& e) {
            e.add_context("as " + what + " of " + label());
            throw;
        }
    } else {
        TANDEM_CHECK_AS(ConfigError, inputs.size() == 1)
            << label() << ": " << what << " takes one input, got " << inputs.size() << " ("
            << quoted_list(inputs) << "); join several with nn.Concat, nn.Add or nn.Mul first";
    }
    for (const auto& in : inputs) node.inputs.push_back(value_index(in, what));
    // Every check comes before any change: a refused layer stays as it was.
    adopt(*layer);
    layer->set_name(name);
    node.layer = std::move(layer);
    nodes_.push_back(std::move(node));
    return name;
}

void Graph::set_outputs(const std::vector<std::string>& names) {
    check_not_in_engine();
    TANDEM_CHECK_AS(ConfigError, !names.empty())
        << label() << ": a graph needs at least one output";
    std::vector<std::size_t> outputs;
    for (const auto& name : names) {
        const std::size_t v = value_index(name, "the outputs");
        TANDEM_CHECK_AS(ConfigError, std::find(outputs.begin(), outputs.end(), v) == outputs.end())
            << label() << ": '" << name << "' is listed twice among the outputs";
        outputs.push_back(v);
    }
    outputs_ = std::move(outputs);
}

std::shared_ptr<Graph> Graph::build(const std::vector<std::string>& inputs,
                                    std::vector<NodeSpec> nodes,
                                    const std::vector<std::string>& outputs) {
    auto graph = std::make_shared<Graph>();
    for (const auto& name : inputs) graph->add_input(name);
    // Kahn's order: a node is added once every name it takes is an input or an added node.
    std::map<std::string, std::size_t> by_name;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        TANDEM_CHECK_AS(ConfigError, nodes[i].layer != nullptr)
            << "Graph: node " << i + 1 << " has no layer";
        const std::string& name = nodes[i].layer->name();
        if (name.empty()) continue;
        TANDEM_CHECK_AS(ConfigError, by_name.emplace(name, i).second)
            << "Graph: two nodes are named '" << name << "' (names of inputs and nodes are unique)";
    }
    std::vector<bool> added(nodes.size(), false);
    auto ready = [&](const NodeSpec& spec) {
        for (const auto& in : spec.inputs) {
            if (std::find(inputs.begin(), inputs.end(), in) != inputs.end()) continue;
            auto it = by_name.find(in);
            if (it != by_name.end() && !added[it->second]) return false;
            // An unknown name is reported by add(), with the names known so far.
        }
        return true;
    };
    for (std::size_t done = 0; done < nodes.size();) {
        bool progress = false;
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            if (added[i] || !ready(nodes[i])) continue;
            graph->add(nodes[i].layer, nodes[i].inputs);
            added[i] = true;
            ++done;
            progress = true;
        }
        if (progress) continue;
        // Every node left waits on another left: follow inputs among them until one repeats.
        std::size_t at = 0;
        while (added[at]) ++at;
        std::vector<std::size_t> path;
        while (std::find(path.begin(), path.end(), at) == path.end()) {
            path.push_back(at);
            for (const auto& in : nodes[at].inputs) {
                auto it = by_name.find(in);
                if (it != by_name.end() && !added[it->second]) {
                    at = it->second;
                    break;
                }
            }
        }
        std::vector<std::string> cycle;
        for (auto it = std::find(path.begin(), path.end(), at); it != path.end(); ++it)
            cycle.push_back(nodes[*it].layer->name());
        TANDEM_THROW(ConfigError)
            << "Graph: nodes " << quoted_list(cycle)
            << " feed each other in a cycle (a graph runs each node after its inputs)";
    }
    graph->set_outputs(outputs);
    return graph;
}

std::vector<std::string> Graph::output_names() const {
    std::vector<std::string> names;
    for (std::size_t v : outputs_)
        names.push_back(v < input_names_.size() ? input_names_[v]
                                                : nodes_[v - input_names_.size()].layer->name());
    return names;
}

std::vector<std::string> Graph::node_input_names(std::size_t i) const {
    std::vector<std::string> names;
    for (std::size_t v : nodes_.at(i).inputs)
        names.push_back(v < input_names_.size() ? input_names_[v]
                                                : nodes_[v - input_names_.size()].layer->name());
    return names;
}

std::string Graph::options_text() const {
    return std::to_string(input_names_.size()) +
           (input_names_.size() == 1 ? " input, " : " inputs, ") + std::to_string(nodes_.size()) +
           (nodes_.size() == 1 ? " node, " : " nodes, ") + std::to_string(outputs_.size()) +
           (outputs_.size() == 1 ? " output" : " outputs");
}

void Graph::check_complete() const {
    TANDEM_CHECK_AS(ConfigError, !input_names_.empty())
        << label() << " has no inputs (g:input(name) declares one)";
    TANDEM_CHECK_AS(ConfigError, !outputs_.empty())
        << label() << " has no outputs (g:output(name) names them)";
    // Walk back from the outputs: whatever is not reached feeds nothing the graph returns.
    const std::size_t inputs = input_names_.size();
    std::vector<bool> used(inputs + nodes_.size(), false);
    for (std::size_t v : outputs_) used[v] = true;
    for (std::size_t i = nodes_.size(); i-- > 0;)
        if (used[inputs + i])
            for (std::size_t v : nodes_[i].inputs) used[v] = true;
    for (std::size_t i = 0; i < inputs; ++i)
        TANDEM_CHECK_AS(ConfigError, used[i])
            << label() << ": input '" << input_names_[i] << "' feeds no output of the graph";
    for (std::size_t i = 0; i < nodes_.size(); ++i)
        TANDEM_CHECK_AS(ConfigError, used[inputs + i])
            << label() << ": node " << nodes_[i].layer->label()
            << " leads to no output of the graph (its parameters would never train); connect it or "
               "remove it";
}

void Graph::check_one_in_one_out(const char* what) const {
    check_complete();
    TANDEM_CHECK_AS(ConfigError, input_names_.size() == 1 && outputs_.size() == 1)
        << label() << " has " << input_names_.size() << " input(s) and " << outputs_.size()
        << " output(s): " << what
        << " needs one of each (g:forward{x1, x2, ...} runs a graph of several)";
}

GraphPart Graph::as_part() const {
    const std::size_t inputs = input_names_.size();
    std::vector<PartNode> part;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        PartNode node;
        node.layer = nodes_[i].layer.get();
        node.merge = nodes_[i].merge;
        node.inputs = nodes_[i].inputs;
        node.output = inputs + i;
        // A node reading the graph's input needs its gradient when the graph's caller does.
        if (node.inputs[0] < inputs) node.need_dx = std::nullopt;
        node.where = "node " + node.layer->label() + " of " + label();
        part.push_back(std::move(node));
    }
    return GraphPart(std::move(part), outputs_);
}

std::vector<Graph::Values> Graph::run_forward(const std::vector<std::vector<Tensor>>& inputs,
                                              const std::vector<Pass*>& passes, bool together) {
    std::vector<Shape> shapes;
    for (const Tensor& x : inputs.front()) shapes.push_back(x.shape());
    (void)value_shapes(shapes);  // every shape error before any work, naming the node
    const bool train = passes.front()->mode == Mode::train;
    std::vector<Values> values(inputs);
    for (auto& v : values) v.resize(input_names_.size() + nodes_.size());
    GraphPart part = as_part();
    if (together) {
        part.forward_many(values, passes);
    } else {
        // In evaluation a value is dropped after its last reader (training keeps them all).
        part.forward(values[0], *passes[0], 0, nodes_.size(),
                     train ? GraphPart::Keep::for_backward : GraphPart::Keep::outputs);
    }
    if (train)
        for (std::size_t m = 0; m < passes.size(); ++m) passes[m]->saved.put(this, values[m]);
    return values;
}

std::vector<std::vector<Tensor>> Graph::run_backward(const std::vector<std::vector<Tensor>>& dys,
                                                     const std::vector<Pass*>& passes,
                                                     bool together) {
    const std::size_t batches = passes.size();
    const std::size_t inputs = input_names_.size();
    std::vector<Values> values;
    for (Pass* pass : passes) {
        values.push_back(pass->saved.get(this));
        TANDEM_CHECK(values.back().size() == inputs + nodes_.size())
            << label() << ": backward after a forward of " << values.back().size() << " values";
    }
    std::vector<Values> grads(batches, Values(inputs + nodes_.size()));
    for (std::size_t m = 0; m < batches; ++m) {
        TANDEM_CHECK_AS(ShapeError, dys[m].size() == outputs_.size())
            << label() << " has " << outputs_.size() << " output(s), got " << dys[m].size()
            << " gradient(s)";
        for (std::size_t o = 0; o < outputs_.size(); ++o) {
            const Tensor& value = values[m][outputs_[o]];
            TANDEM_CHECK_AS(ShapeError, !dys[m][o].defined() || dys[m][o].shape() == value.shape())
                << label() << ": the gradient of output '" << output_names()[o] << "' is "
                << dys[m][o].shape().to_string() << ", the output is " << value.shape().to_string();
            add_in_layout(grads[m][outputs_[o]], dys[m][o], value, passes[m]->device);
        }
    }
    GraphPart part = as_part();
    if (together)
        part.backward_many(values, grads, passes);
    else
        part.backward(values[0], grads[0], *passes[0], 0, nodes_.size());
    std::vector<std::vector<Tensor>> out(batches);
    for (std::size_t m = 0; m < batches; ++m) {
        out[m].assign(grads[m].begin(), grads[m].begin() + static_cast<std::ptrdiff_t>(inputs));
        passes[m]->saved.erase(this);
    }
    return out;
}

std::vector<Tensor> Graph::forward_graph(const std::vector<Tensor>& xs, Pass& pass) {
    const auto values = run_forward({xs}, {&pass}, false);
    std::vector<Tensor> out;
    for (std::size_t v : outputs_) out.push_back(values[0][v]);
    return out;
}

std::vector<Tensor> Graph::backward_graph(const std::vector<Tensor>& dys, Pass& pass) {
    return run_backward({dys}, {&pass}, false)[0];
}

void Graph::bind_graph(Device& device, const std::vector<Shape>& inputs, Layout layout) {
    const auto shapes = value_shapes(inputs);
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        Node& node = nodes_[i];
        if (node.merge != nullptr) {  // builds its kernels on first use
            node.layer->to(device);
            continue;
        }
        const Shape& in = shapes[node.inputs[0]];
        try {
            // Only images have a channels_last layout; other values are contiguous.
            node.layer->bind(device, in, in.rank() == 4 ? layout : Layout::contiguous);
        } catch (Error& e) {
            e.add_context("in node " + node.layer->label() + " of " + label() + ", input " +
                          in.to_string());
            throw;
        }
    }
}

Tensor Graph::forward(const Tensor& x, Pass& pass) {
    check_one_in_one_out("a layer of a net");
    return forward_graph({x}, pass)[0];
}

Tensor Graph::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    (void)x;  // every node's inputs were kept by forward
    check_one_in_one_out("a layer of a net");
    return backward_graph({dy}, pass)[0];
}

std::vector<Tensor> Graph::forward_many(const std::vector<Tensor>& xs,
                                        const std::vector<Pass*>& passes) {
    check_one_in_one_out("a layer of a net");
    std::vector<std::vector<Tensor>> inputs;
    for (const Tensor& x : xs) inputs.push_back({x});
    const auto values = run_forward(inputs, passes, true);
    std::vector<Tensor> ys;
    for (const auto& v : values) ys.push_back(v[outputs_[0]]);
    return ys;
}

std::vector<Tensor> Graph::backward_many(const std::vector<Tensor>& xs,
                                         const std::vector<Tensor>& dys,
                                         const std::vector<Pass*>& passes) {
    (void)xs;
    check_one_in_one_out("a layer of a net");
    std::vector<std::vector<Tensor>> grads;
    for (const Tensor& dy : dys) grads.push_back({dy});
    std::vector<Tensor> dxs;
    for (auto& g : run_backward(grads, passes, true)) dxs.push_back(g[0]);
    return dxs;
}

LayerPtr Graph::clone() const {
    auto copy = std::make_shared<Graph>();
    for (const auto& name : input_names_) copy->add_input(name);
    for (std::size_t i = 0; i < nodes_.size(); ++i)
        copy->add(nodes_[i].layer->clone(), node_input_names(i));
    if (!outputs_.empty()) copy->set_outputs(output_names());
    return finish_clone(copy);
}

std::vector<Layer*> Graph::children() {
    std::vector<Layer*> out;
    for (auto& node : nodes_) out.push_back(node.layer.get());
    return out;
}

void Graph::initialize(std::uint64_t seed) {
    for (auto& node : nodes_) node.layer->initialize(rng_key(seed, node.layer->name()));
}

void Graph::on_bind(Device& device, const Shape& input, Layout layout) {
    check_one_in_one_out("a layer of a net");
    bind_graph(device, {input}, layout);
}

}  // namespace tandem
