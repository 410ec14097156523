#include "parallel/stage_graph.h"

#include <algorithm>
#include <functional>
#include <sstream>
#include <string>

#include "base/error.h"

namespace tandem {
namespace {

std::string end_name(int stage, bool from) {
    if (stage >= 0) return "stage " + std::to_string(stage);
    return from ? "the batch input" : "the loss";
}

std::string stage_list(const std::vector<int>& stages) {
    std::ostringstream out;
    out << (stages.size() == 1 ? "stage " : "stages ");
    for (std::size_t i = 0; i < stages.size(); ++i) out << (i ? ", " : "") << stages[i];
    return out.str();
}

// Each stage's layers in range, and every layer of the net in exactly one stage (its
// parameters are reduced and updated by that stage alone).
void check_layers(const StageGraph& graph, std::size_t layers) {
    std::vector<int> owner(layers, -1);
    for (std::size_t s = 0; s < graph.stages.size(); ++s) {
        const StageNode& node = graph.stages[s];
        TANDEM_CHECK_AS(ConfigError, node.layer_begin < node.layer_end)
            << "stage " << s << " has no layers (it runs [" << node.layer_begin << ", "
            << node.layer_end << "))";
        TANDEM_CHECK_AS(ConfigError, node.layer_end <= layers)
            << "stage " << s << " runs layers [" << node.layer_begin << ", " << node.layer_end
            << ") of a net of " << layers;
        for (std::size_t i = node.layer_begin; i < node.layer_end; ++i) {
            TANDEM_CHECK_AS(ConfigError, owner[i] < 0)
                << "stages " << owner[i] << " and " << s << " both run layer " << i;
            owner[i] = static_cast<int>(s);
        }
    }
    const auto orphan = std::find(owner.begin(), owner.end(), -1);
    TANDEM_CHECK_AS(ConfigError, orphan == owner.end())
        << "layer " << orphan - owner.begin() << " is in no stage";
}

// Every edge's ends exist, and each stage lists exactly the edges that end at it.
void check_edges(const StageGraph& graph) {
    const int stages = static_cast<int>(graph.stages.size());
    for (std::size_t i = 0; i < graph.edges.size(); ++i) {
        const StageEdge& e = graph.edges[i];
        TANDEM_CHECK_AS(ConfigError, e.id == static_cast<int>(i))
            << "edge " << i << " says its id is " << e.id;
        TANDEM_CHECK_AS(ConfigError,
                        e.from >= kBatchInput && e.from < stages && e.to >= kLoss && e.to < stages)
            << "edge " << i << " goes from " << e.from << " to " << e.to << "; the graph has "
            << stages << " stages";
        TANDEM_CHECK_AS(ConfigError, e.from >= 0 || e.to >= 0)
            << "edge " << i << " goes from the batch input straight to the loss: no stage runs it";
        TANDEM_CHECK_AS(ConfigError, e.from != e.to)
            << "edge " << i << " goes from stage " << e.from << " to itself: a cycle";
    }
    std::vector<int> listed_as_input(graph.edges.size(), 0),
        listed_as_output(graph.edges.size(), 0);
    auto check_list = [&](int s, const std::vector<int>& ids, bool inputs) {
        for (int id : ids) {
            TANDEM_CHECK_AS(ConfigError, id >= 0 && id < static_cast<int>(graph.edges.size()))
                << "stage " << s << " lists edge " << id << ", which the graph does not have";
            const StageEdge& e = graph.edge(id);
            const int end = inputs ? e.to : e.from;
            TANDEM_CHECK_AS(ConfigError, end == s)
                << "stage " << s << " lists edge " << id << " among its "
                << (inputs ? "inputs" : "outputs") << ", but it goes from "
                << end_name(e.from, true) << " to " << end_name(e.to, false);
            ++(inputs ? listed_as_input : listed_as_output)[static_cast<std::size_t>(id)];
        }
    };
    for (int s = 0; s < stages; ++s) {
        check_list(s, graph.stage(s).inputs, true);
        check_list(s, graph.stage(s).outputs, false);
        TANDEM_CHECK_AS(ConfigError, !graph.stage(s).inputs.empty())
            << "stage " << s << " has no input (no edge from the batch input or another stage)";
    }
    for (const StageEdge& e : graph.edges) {
        const auto id = static_cast<std::size_t>(e.id);
        TANDEM_CHECK_AS(ConfigError, e.to < 0 || listed_as_input[id] > 0)
            << "edge " << e.id << " goes to stage " << e.to
            << ", which does not list it among its inputs";
        TANDEM_CHECK_AS(ConfigError, e.from < 0 || listed_as_output[id] > 0)
            << "edge " << e.id << " comes from stage " << e.from
            << ", which does not list it among its outputs";
        TANDEM_CHECK_AS(ConfigError, listed_as_input[id] <= 1 && listed_as_output[id] <= 1)
            << "stage " << (listed_as_input[id] > 1 ? e.to : e.from) << " lists edge " << e.id
            << " more than once";
    }
}

void check_one_loss(const StageGraph& graph) {
    std::vector<int> computing;
    for (const StageEdge& e : graph.edges)
        if (e.to == kLoss) computing.push_back(e.from);
    TANDEM_CHECK_AS(ConfigError, !computing.empty())
        << "no stage computes the loss (no edge goes to the loss)";
    TANDEM_CHECK_AS(ConfigError, computing.size() == 1)
        << stage_list(computing)
        << " all compute the loss: a net has one loss, computed by one stage";
}

// Depth-first over stage-to-stage edges; a cycle is named stage by stage.
void check_acyclic(const StageGraph& graph) {
    enum Mark { unseen, open, done };
    std::vector<Mark> mark(graph.stages.size(), unseen);
    std::vector<int> path;
    std::function<void(int)> visit = [&](int s) {
        mark[static_cast<std::size_t>(s)] = open;
        path.push_back(s);
        for (int id : graph.stage(s).outputs) {
            const int t = graph.edge(id).to;
            if (t < 0 || mark[static_cast<std::size_t>(t)] == done) continue;
            if (mark[static_cast<std::size_t>(t)] == open) {
                std::ostringstream cycle;
                for (auto it = std::find(path.begin(), path.end(), t); it != path.end(); ++it)
                    cycle << *it << " -> ";
                TANDEM_THROW(ConfigError)
                    << "stages " << cycle.str() << t
                    << " form a cycle: a stage cannot wait for its own output";
            }
            visit(t);
        }
        path.pop_back();
        mark[static_cast<std::size_t>(s)] = done;
    };
    for (int s = 0; s < static_cast<int>(graph.stages.size()); ++s)
        if (mark[static_cast<std::size_t>(s)] == unseen) visit(s);
}

// A stage whose output never reaches the loss gets no gradient: its training would be a no-op
// and its backward would wait forever.
void check_reaches_loss(const StageGraph& graph) {
    std::vector<bool> reaches(graph.stages.size(), false);
    std::vector<int> todo{graph.loss_stage()};
    reaches[static_cast<std::size_t>(todo.front())] = true;
    while (!todo.empty()) {
        const int s = todo.back();
        todo.pop_back();
        for (int id : graph.stage(s).inputs) {
            const int from = graph.edge(id).from;
            if (from < 0 || reaches[static_cast<std::size_t>(from)]) continue;
            reaches[static_cast<std::size_t>(from)] = true;
            todo.push_back(from);
        }
    }
    std::vector<int> stranded;
    for (std::size_t s = 0; s < reaches.size(); ++s)
        if (!reaches[s]) stranded.push_back(static_cast<int>(s));
    TANDEM_CHECK_AS(ConfigError, stranded.empty())
        << stage_list(stranded) << (stranded.size() == 1 ? " has" : " have")
        << " no path to the loss (no chain of edges carries the output there)";
}

}  // namespace

int StageGraph::loss_stage() const {
    for (const StageEdge& e : edges)
        if (e.to == kLoss) return e.from;
    TANDEM_THROW(ConfigError) << "no stage computes the loss (no edge goes to the loss)";
}

StageGraph chain_stage_graph(const std::vector<std::size_t>& bounds,
                             const std::vector<std::size_t>& boundary_bytes) {
    StageGraph graph;
    if (bounds.size() < 2) return graph;
    const int stages = static_cast<int>(bounds.size()) - 1;
    for (int i = 0; i <= stages; ++i) {
        StageEdge e;
        e.id = i;
        e.from = i == 0 ? kBatchInput : i - 1;
        e.to = i == stages ? kLoss : i;
        e.bytes = boundary_bytes.empty() ? 0 : boundary_bytes[static_cast<std::size_t>(i)];
        graph.edges.push_back(e);
    }
    for (int s = 0; s < stages; ++s) {
        StageNode node;
        node.layer_begin = bounds[static_cast<std::size_t>(s)];
        node.layer_end = bounds[static_cast<std::size_t>(s) + 1];
        node.inputs = {s};
        node.outputs = {s + 1};
        graph.stages.push_back(std::move(node));
    }
    return graph;
}

void check_stage_graph(const StageGraph& graph, std::size_t layers) {
    TANDEM_CHECK_AS(ConfigError, !graph.stages.empty()) << "a stage graph needs at least one stage";
    check_layers(graph, layers);
    check_edges(graph);
    check_one_loss(graph);
    check_acyclic(graph);
    check_reaches_loss(graph);
}

std::vector<int> stage_depths(const StageGraph& graph) {
    // Longest paths in a DAG: each stage once, after the stages its outputs go to.
    std::vector<int> depth(graph.stages.size(), -1);
    std::function<int(int)> of = [&](int s) {
        int& d = depth[static_cast<std::size_t>(s)];
        if (d >= 0) return d;
        d = 0;
        for (int id : graph.stage(s).outputs)
            if (const int t = graph.edge(id).to; t >= 0) d = std::max(d, of(t) + 1);
        return d;
    };
    for (int s = 0; s < static_cast<int>(graph.stages.size()); ++s) of(s);
    return depth;
}

}  // namespace tandem
