#include "parallel/unit_placement.h"

#include <algorithm>
#include <map>
#include <set>

#include "base/error.h"
#include "layers/graph.h"
#include "layers/merge.h"
#include "layers/residual.h"

namespace tandem {
namespace {

Graph* as_graph(Layer& layer) {
    return dynamic_cast<Graph*>(&layer);
}

Residual* as_residual(Layer& layer) {
    return dynamic_cast<Residual*>(&layer);
}

// The top-level graphs and residual blocks a placement opens up: those with a unit named
// "graph.node" or "block.body.layer".
std::set<std::size_t> layers_to_open(const Sequential& net,
                                     const std::vector<std::vector<std::string>>& stages) {
    std::set<std::size_t> open;
    for (std::size_t i = 0; i < net.size(); ++i) {
        const std::string prefix = net.at(i).name() + ".";
        for (const auto& stage : stages)
            for (const auto& name : stage)
                if (name.rfind(prefix, 0) == 0 && (as_graph(net.at(i)) || as_residual(net.at(i))))
                    open.insert(i);
    }
    return open;
}

bool openable(Layer& layer) {
    const Graph* graph = as_graph(layer);
    return graph && graph->node_count() > 0 && graph->input_names().size() == 1 &&
           graph->output_values().size() == 1;
}

// The top-level layers `opening` opens: none; every graph that takes one input and makes one
// output; those and every residual block.
std::set<std::size_t> layers_to_open(Sequential& net, Opening opening) {
    std::set<std::size_t> open;
    for (std::size_t i = 0; i < net.size(); ++i)
        if ((opening != Opening::layers && openable(net.at(i))) ||
            (opening == Opening::blocks && as_residual(net.at(i))))
            open.insert(i);
    return open;
}

// Residual block `i` as units reading value `x`: its body's layers, its shortcut's, and the add
// of the two (Residual::join, the body's output first, as the block adds). Returns its output.
std::size_t flatten_block(Residual& block, std::size_t i, std::size_t x,
                          std::vector<NetUnit>& units) {
    const std::string prefix = block.name() + ".";
    int k = 0;  // the unit's index in the block
    auto chain = [&](Sequential& branch, std::size_t at) {
        for (std::size_t l = 0; l < branch.size(); ++l) {
            units.push_back({prefix + branch.name() + "." + branch.at(l).name(),
                             i,
                             k++,
                             {at},
                             units.size() + 1});
            at = units.back().value;
        }
        return at;
    };
    const std::size_t body = chain(block.body(), x);
    const std::size_t shortcut = block.shortcut() ? chain(*block.shortcut(), x) : x;
    units.push_back({prefix + block.join().name(), i, k, {body, shortcut}, units.size() + 1});
    return units.back().value;
}

// The net's units in its own order (a topological one): top-level layers, the nodes of the
// graphs in `open` and the layers of the blocks in `open`. Value 0 is the batch; unit u makes
// value u + 1. Returns the output.
std::size_t flatten(Sequential& net, const std::set<std::size_t>& open,
                    std::vector<NetUnit>& units) {
    std::size_t previous = kBatchValue;  // what the next top-level layer reads
    for (std::size_t i = 0; i < net.size(); ++i) {
        Layer& layer = net.at(i);
        if (!open.count(i)) {
            units.push_back({layer.name(), i, -1, {previous}, units.size() + 1});
            previous = units.back().value;
            continue;
        }
        if (Residual* block = as_residual(layer)) {
            previous = flatten_block(*block, i, previous, units);
            continue;
        }
        Graph& graph = *as_graph(layer);
        TANDEM_CHECK_AS(ConfigError,
                        graph.input_names().size() == 1 && graph.output_values().size() == 1)
            << "parallel.placement names nodes of " << graph.label() << ", which takes "
            << graph.input_names().size() << " input(s) and makes " << graph.output_values().size()
            << " output(s); a graph inside the net takes one and makes one";
        // The graph's values (its input, then its nodes) as the net's.
        std::vector<std::size_t> value_of{previous};
        for (std::size_t n = 0; n < graph.node_count(); ++n) {
            NetUnit unit{layer.name() + "." + graph.node(n).name(),
                         i,
                         static_cast<int>(n),
                         {},
                         units.size() + 1};
            for (std::size_t v : graph.node_input_values(n)) unit.inputs.push_back(value_of[v]);
            value_of.push_back(unit.value);
            units.push_back(std::move(unit));
        }
        previous = value_of[graph.output_values().front()];
    }
    return previous;
}

// Each unit's stage (counted from 0) from the placement's names.
std::vector<int> unit_stages(const Sequential& net, const std::vector<NetUnit>& units,
                             const std::vector<std::vector<std::string>>& stages) {
    std::vector<int> stage_of(units.size(), -1);
    for (std::size_t s = 0; s < stages.size(); ++s) {
        TANDEM_CHECK_AS(ConfigError, !stages[s].empty())
            << "parallel.placement: stage " << s + 1 << " names no layer";
        for (const auto& name : stages[s]) {
            bool found = false;
            for (std::size_t u = 0; u < units.size(); ++u) {
                // A top-level graph's name places every node of it that is a unit.
                const bool whole_graph =
                    units[u].node >= 0 && net.at(units[u].layer).name() == name;
                if (units[u].name != name && !whole_graph) continue;
                found = true;
                TANDEM_CHECK_AS(ConfigError, stage_of[u] < 0 || stage_of[u] == static_cast<int>(s))
                    << "parallel.placement: '" << units[u].name << "' is in stage "
                    << stage_of[u] + 1 << " and in stage " << s + 1
                    << "; every layer goes in exactly one stage";
                stage_of[u] = static_cast<int>(s);
            }
            if (found) continue;
            std::string known;
            for (const auto& unit : units) known += (known.empty() ? "'" : ", '") + unit.name + "'";
            TANDEM_THROW(ConfigError) << "parallel.placement: stage " << s + 1 << " names '" << name
                                      << "', which is no layer of the net (its layers: " << known
                                      << "; a graph's nodes as 'graph.node')";
        }
    }
    for (std::size_t u = 0; u < units.size(); ++u)
        TANDEM_CHECK_AS(ConfigError, stage_of[u] >= 0)
            << "parallel.placement: '" << units[u].name
            << "' is in no stage; every layer goes in exactly one";
    return stage_of;
}

// The stages in a topological order (the lowest index first among the ready ones); ConfigError
// naming the stages of a cycle and the reads that close it.
std::vector<int> stage_order(const std::vector<NetUnit>& units, const std::vector<int>& stage_of,
                             int stages) {
    // reads[t][s]: a unit of stage t reads one of stage s (the first such pair, for messages).
    std::vector<std::map<int, std::pair<std::size_t, std::size_t>>> reads(
        static_cast<std::size_t>(stages));
    for (std::size_t u = 0; u < units.size(); ++u)
        for (std::size_t v : units[u].inputs) {
            if (v == kBatchValue) continue;
            const int s = stage_of[v - 1], t = stage_of[u];
            if (s != t) reads[static_cast<std::size_t>(t)].emplace(s, std::make_pair(u, v - 1));
        }
    std::vector<int> order;
    std::vector<bool> done(static_cast<std::size_t>(stages), false);
    while (static_cast<int>(order.size()) < stages) {
        int ready = -1;
        for (int t = 0; t < stages && ready < 0; ++t) {
            if (done[static_cast<std::size_t>(t)]) continue;
            bool waits = false;
            for (const auto& [s, why] : reads[static_cast<std::size_t>(t)])
                waits = waits || !done[static_cast<std::size_t>(s)];
            if (!waits) ready = t;
        }
        if (ready >= 0) {
            done[static_cast<std::size_t>(ready)] = true;
            order.push_back(ready);
            continue;
        }
        // Every stage left reads one left: follow such reads back until a stage repeats.
        int at = 0;
        while (done[static_cast<std::size_t>(at)]) ++at;
        std::vector<int> path;
        while (std::find(path.begin(), path.end(), at) == path.end()) {
            path.push_back(at);
            for (const auto& [s, why] : reads[static_cast<std::size_t>(at)])
                if (!done[static_cast<std::size_t>(s)]) {
                    at = s;
                    break;
                }
        }
        std::string stages_text, why_text;
        for (auto it = std::find(path.begin(), path.end(), at); it != path.end(); ++it) {
            const int next = it + 1 == path.end() ? at : *(it + 1);
            const auto& [reader, made] = reads[static_cast<std::size_t>(*it)].at(next);
            stages_text += (stages_text.empty() ? "" : ", ") + std::to_string(*it + 1);
            why_text +=
                (why_text.empty() ? "" : "; ") +
                ("'" + units[reader].name + "' (stage " + std::to_string(*it + 1) + ") reads '" +
                 units[made].name + "' (stage " + std::to_string(next + 1) + ")");
        }
        TANDEM_THROW(ConfigError) << "parallel.placement: stages " << stages_text
                                  << " feed each other in a cycle (" << why_text
                                  << "); each stage must run after every stage it reads";
    }
    return order;
}

// The placement of units `flat` (in the net's order, making `output`) whose unit u goes on
// stage stage_of[u]: the stages in a topological order, each stage's units contiguous.
UnitPlacement assemble(const std::vector<NetUnit>& flat, std::size_t output,
                       const std::vector<int>& stage_of, int count) {
    UnitPlacement placed;
    placed.values = flat.size() + 1;
    placed.loss_value = output;
    placed.graph.stages.resize(static_cast<std::size_t>(count));
    std::vector<int> producer(placed.values, kBatchInput);  // each value's stage
    for (std::size_t u = 0; u < flat.size(); ++u) producer[flat[u].value] = stage_of[u];
    for (int s : stage_order(flat, stage_of, count)) {
        StageNode& node = placed.graph.stages[static_cast<std::size_t>(s)];
        node.layer_begin = placed.units.size();
        std::vector<std::size_t> received;  // values read from outside, each along one edge
        for (std::size_t u = 0; u < flat.size(); ++u) {
            if (stage_of[u] != s) continue;
            placed.units.push_back(flat[u]);
            for (std::size_t v : flat[u].inputs) {
                if (producer[v] == s ||
                    std::find(received.begin(), received.end(), v) != received.end())
                    continue;
                received.push_back(v);
                const int id = static_cast<int>(placed.graph.edges.size());
                placed.graph.edges.push_back({.id = id, .from = producer[v], .to = s});
                placed.edge_values.push_back(v);
                node.inputs.push_back(id);
            }
        }
        node.layer_end = placed.units.size();
    }
    const int loss_edge = static_cast<int>(placed.graph.edges.size());
    placed.graph.edges.push_back({.id = loss_edge, .from = producer[output], .to = kLoss});
    placed.edge_values.push_back(output);
    for (const StageEdge& e : placed.graph.edges)
        if (e.from >= 0)
            placed.graph.stages[static_cast<std::size_t>(e.from)].outputs.push_back(e.id);
    check_stage_graph(placed.graph, placed.units.size());
    return placed;
}

}  // namespace

Layer& unit_layer(Sequential& net, const NetUnit& unit) {
    Layer& layer = net.at(unit.layer);
    if (unit.node < 0) return layer;
    if (Residual* block = as_residual(layer)) {
        // flatten_block's order: the body's layers, the shortcut's, the add.
        auto k = static_cast<std::size_t>(unit.node);
        if (k < block->body().size()) return block->body().at(k);
        k -= block->body().size();
        Sequential* shortcut = block->shortcut();
        if (shortcut && k < shortcut->size()) return shortcut->at(k);
        return block->join();
    }
    Graph* graph = as_graph(layer);
    TANDEM_CHECK(graph != nullptr)
        << "unit '" << unit.name << "': layer " << layer.label() << " is not a graph";
    return graph->node(static_cast<std::size_t>(unit.node));
}

UnitPlacement place_units(Sequential& net, const std::vector<std::vector<std::string>>& stages) {
    TANDEM_CHECK_AS(ConfigError, !stages.empty()) << "parallel.placement lists no stage";
    std::vector<NetUnit> flat;
    const std::size_t output = flatten(net, layers_to_open(net, stages), flat);
    TANDEM_CHECK_AS(ConfigError, output != kBatchValue)
        << "parallel.placement: the net returns its input unchanged; there is nothing to place";
    return assemble(flat, output, unit_stages(net, flat, stages), static_cast<int>(stages.size()));
}

bool opens_units(Sequential& net, Opening opening) {
    return !layers_to_open(net, opening).empty();
}

std::size_t chain_unit_count(Sequential& net, Opening opening) {
    std::vector<NetUnit> flat;
    flatten(net, layers_to_open(net, opening), flat);
    return flat.size();
}

UnitPlacement chain_units(Sequential& net, const std::vector<std::size_t>& bounds,
                          Opening opening) {
    std::vector<NetUnit> flat;
    const std::size_t output = flatten(net, layers_to_open(net, opening), flat);
    TANDEM_CHECK(bounds.size() >= 2 && bounds.front() == 0 && bounds.back() == flat.size())
        << "chain bounds must run from 0 to the net's " << flat.size() << " units";
    std::vector<int> stage_of;
    for (std::size_t s = 0; s + 1 < bounds.size(); ++s)
        stage_of.insert(stage_of.end(), bounds[s + 1] - bounds[s], static_cast<int>(s));
    return assemble(flat, output, stage_of, static_cast<int>(bounds.size() - 1));
}

std::vector<std::vector<std::size_t>> UnitPlacement::parameter_bytes(Sequential& net) const {
    std::vector<std::vector<std::size_t>> bytes;
    for (const NetUnit& unit : units)
        bytes.push_back(parameter_tensor_bytes(unit_layer(net, unit)));
    return bytes;
}

GraphPart UnitPlacement::part(Sequential& net, std::size_t begin, std::size_t end,
                              std::vector<std::size_t> outputs) const {
    std::vector<PartNode> nodes;
    for (std::size_t i = begin; i < end; ++i) {
        const NetUnit& unit = units[i];
        PartNode node;
        node.layer = &unit_layer(net, unit);
        node.merge = dynamic_cast<Merge*>(node.layer);
        node.inputs = unit.inputs;
        node.output = unit.value;
        node.need_dx = std::any_of(unit.inputs.begin(), unit.inputs.end(),
                                   [](std::size_t v) { return v != kBatchValue; });
        node.where = unit.node < 0
                         ? "layer " + std::to_string(unit.layer + 1) + " " + node.layer->label()
                         : "node " + node.layer->label() + " of " + net.at(unit.layer).label();
        nodes.push_back(std::move(node));
    }
    return GraphPart(std::move(nodes), std::move(outputs));
}

GraphPart UnitPlacement::stage_part(Sequential& net, int stage) const {
    const StageNode& node = graph.stage(stage);
    std::vector<std::size_t> outputs;
    for (int id : node.outputs) outputs.push_back(edge_values[static_cast<std::size_t>(id)]);
    return part(net, node.layer_begin, node.layer_end, std::move(outputs));
}

UnitPlacement all_units(Sequential& net, Opening opening) {
    return chain_units(net, {0, chain_unit_count(net, opening)}, opening);
}

std::vector<std::vector<std::size_t>> UnitPlacement::first_reads() const {
    std::vector<bool> read(values, false);
    std::vector<std::vector<std::size_t>> first(units.size());
    for (std::size_t u = 0; u < units.size(); ++u)
        for (std::size_t v : units[u].inputs)
            if (!read[v]) first[u].push_back(v), read[v] = true;
    return first;
}

std::vector<std::vector<std::string>> compact_stage_names(const std::vector<std::string>& names,
                                                          const std::vector<std::string>& owners,
                                                          const std::vector<UnitRange>& ranges) {
    TANDEM_CHECK(owners.size() == names.size())
        << owners.size() << " owners for " << names.size() << " units";
    // Each opened layer's stage, or -1 when its units are on several.
    std::map<std::string, int> stage_of;
    for (std::size_t s = 0; s < ranges.size(); ++s)
        for (std::size_t u = ranges[s].first; u < ranges[s].second; ++u) {
            if (owners.at(u).empty()) continue;
            const auto [at, added] = stage_of.emplace(owners[u], static_cast<int>(s));
            if (!added && at->second != static_cast<int>(s)) at->second = -1;
        }
    std::vector<std::vector<std::string>> stages;
    for (const auto& [begin, end] : ranges) {
        auto& stage = stages.emplace_back();
        for (std::size_t u = begin; u < end; ++u) {
            const std::string& owner = owners[u];
            if (owner.empty() || stage_of.at(owner) < 0)
                stage.push_back(names[u]);
            else if (u == begin || owners[u - 1] != owner)
                stage.push_back(owner);  // the whole layer, once
        }
    }
    return stages;
}

std::vector<std::vector<std::string>> UnitPlacement::stage_names(Sequential& net) const {
    std::vector<std::string> names, owners;
    for (const NetUnit& unit : units) {
        names.push_back(unit.name);
        owners.push_back(unit.node < 0 ? std::string() : net.at(unit.layer).name());
    }
    std::vector<UnitRange> ranges;
    for (const StageNode& node : graph.stages)
        ranges.emplace_back(node.layer_begin, node.layer_end);
    return compact_stage_names(names, owners, ranges);
}

std::vector<std::string> UnitPlacement::stage_unit_names(int stage) const {
    const StageNode& node = graph.stage(stage);
    std::vector<std::string> names;
    for (std::size_t i = node.layer_begin; i < node.layer_end; ++i) names.push_back(units[i].name);
    return names;
}

}  // namespace tandem
