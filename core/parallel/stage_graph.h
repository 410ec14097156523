// StageGraph: how a net is cut into stages, as a directed acyclic graph (issue 17, item 3).
//
// A stage is a set of the net's layers run on one device of each group; an edge carries one
// tensor per micro-batch from where it is made to where it is read: from the batch's images
// or a stage, to a stage or the loss. Activations flow along an edge, their gradients back
// against it. A chain of S stages (a Sequential cut at S - 1 points) is the graph
//   input -e0-> stage 0 -e1-> stage 1 ... stage S-1 -eS-> loss,
// where edge s sits at bound s (chain_stage_graph); a graph net (issue 18) cuts into stages
// with several inputs and outputs, whose branches run on different devices at once.
//
// A stage's layers are a range [layer_begin, layer_end) of the net's layers in their order.
// That covers every DAG cut: when the stages form a DAG, listing the stages in a topological
// order and each stage's layers in a topological order inside it gives a topological order of
// the layers in which every stage is contiguous. So a graph net only has to number its layers
// that way, and everything that reads a stage's layers (gradient buckets, the cost tables,
// Stage) keeps working on a range.
#pragma once

#include <cstddef>
#include <vector>

namespace tandem {

constexpr int kBatchInput = -1;  // StageEdge::from: the batch's images
constexpr int kLoss = -1;        // StageEdge::to: the loss

struct StageEdge {
    int id = 0;              // its index in StageGraph::edges; the StepBoard's key (step_board.h)
    int from = kBatchInput;  // a stage, or kBatchInput
    int to = kLoss;          // a stage, or kLoss
    std::size_t bytes = 0;   // one micro-batch's tensor (0 when not known)
};

struct StageNode {
    std::size_t layer_begin = 0, layer_end = 0;
    std::vector<int> inputs;   // edge ids, in the order the stage's layers take them
    std::vector<int> outputs;  // edge ids: where the stage's output goes
};

struct StageGraph {
    std::vector<StageNode> stages;
    std::vector<StageEdge> edges;

    const StageEdge& edge(int id) const { return edges[static_cast<std::size_t>(id)]; }
    const StageNode& stage(int s) const { return stages[static_cast<std::size_t>(s)]; }
    // The one stage with an edge to the loss.
    int loss_stage() const;
};

// The chain that `bounds` (S + 1 entries: stage s runs [bounds[s], bounds[s + 1])) cuts, with
// edge s at bound s; `boundary_bytes` (empty, or one entry per bound) gives the edges' bytes.
StageGraph chain_stage_graph(const std::vector<std::size_t>& bounds,
                             const std::vector<std::size_t>& boundary_bytes = {});

// ConfigError naming the stage (or edge) for a graph that cannot run: no stage; a stage
// without layers or whose layers overlap another's, a layer in no stage (of `layers`); an edge
// whose ends or ids do not match the stages' lists; a stage without an input or an output;
// no stage, or more than one, computing the loss; a cycle; a stage with no path to the loss.
void check_stage_graph(const StageGraph& graph, std::size_t layers);

// Per stage, the longest path from it to the loss stage, in stage-to-stage edges (the loss
// stage: 0; a chain's stage s: S - 1 - s). The pipeline schedules read it (schedule.h).
std::vector<int> stage_depths(const StageGraph& graph);

}  // namespace tandem
