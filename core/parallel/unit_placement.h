// UnitPlacement: a net's layers as units that stages own, and the stage graph a placement of
// them makes (issue 18, layer-division model parallelism).
//
// The engine's net is a Sequential. Its units are its top-level layers, except that a
// top-level nn.Graph (one input, one output) whose nodes a placement names ("g.lstm") is
// opened up: each of its nodes is a unit, so the branches of the graph can go on different
// devices and run at the same time; so is a top-level nn.Residual whose layers it names
// ("block3.body.conv1"), so that a stage can end inside the block. Every unit makes one value
// and reads some (the batch's images, or other units' values); the net's output is the value
// the loss reads.
//
// A placement lists the stages, each a list of names: top-level layer names ("fc1", or "g"
// for every node of graph g) or "graph.node" names. From it place_units() orders the units so
// that every stage is contiguous (the stages in a topological order, each stage's units in
// the net's order: stage_graph.h says why that order exists whenever the stages form a DAG)
// and derives the StageGraph: an edge for each value that one stage makes and another reads
// (one per reading stage), one from the batch to each stage reading the images, and one from
// the stage making the net's output to the loss. Stage s is the placement's s-th list, whatever
// the order its units run in, so it goes on device g * S + s as every stage does.
//
// Parameters keep the whole net's names ("g.lstm.weight"), so a checkpoint does not depend on
// the placement. Every engine runs a placement of units: a chain (parallel.cuts, the automatic
// split) is one of top-level layers in the net's order (chain_units).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "layers/graph_part.h"
#include "layers/sequential.h"
#include "parallel/stage_graph.h"

namespace tandem {

constexpr std::size_t kBatchValue = 0;  // the value every net reads first: the batch's images

struct NetUnit {
    std::string name;                 // "fc1", or "g.lstm" for node "lstm" of graph "g"
    std::size_t layer = 0;            // its top-level layer in the Sequential
    int node = -1;                    // the node of that layer's Graph; -1: the whole layer
    std::vector<std::size_t> inputs;  // the values it reads, in the order its layer takes them
    std::size_t value = 0;            // the value it makes
};

struct UnitPlacement {
    // In the order the stages' layer ranges index: every stage's units contiguous.
    std::vector<NetUnit> units;
    StageGraph graph;
    std::vector<std::size_t> edge_values;  // per edge of `graph`, the value it carries
    std::size_t values = 0;                // how many: the batch's and one per unit
    std::size_t loss_value = 0;            // the net's output

    // Per unit, the bytes of each of its parameter tensors (the programs' buckets).
    std::vector<std::vector<std::size_t>> parameter_bytes(Sequential& net) const;
    // Units [begin, end) in `net` (the placed net or a replica of it), as a part to run whose
    // caller reads `outputs` (GraphPart's constructor).
    GraphPart part(Sequential& net, std::size_t begin, std::size_t end,
                   std::vector<std::size_t> outputs) const;
    // Stage s's units, as a part whose outputs are what the stage sends or the loss reads.
    GraphPart stage_part(Sequential& net, int stage) const;
    // Stage s's unit names, in the order they run.
    std::vector<std::string> stage_unit_names(int stage) const;
    // Per unit, the values it reads that no unit before it (in this order) reads: what it alone
    // keeps for backward, a value read by two units (a block's input, a branch point) held once.
    std::vector<std::vector<std::size_t>> first_reads() const;
    // Every stage's names: a parallel.placement that gives this placement again (place_units),
    // a top-level layer named whole when all its units are in the stage (so that only the
    // graphs and blocks a stage boundary falls in are opened).
    std::vector<std::vector<std::string>> stage_names(Sequential& net) const;
};

// The layer unit `unit` runs in `net`.
Layer& unit_layer(Sequential& net, const NetUnit& unit);

// ConfigError naming the stage (counted from 1, as the option's list) or the name: no stage, a
// stage without names, a name that is no layer or graph node of the net, a unit in two stages
// or in none, a graph to open that does not take one input and make one output, stages that
// feed each other in a cycle.
UnitPlacement place_units(Sequential& net, const std::vector<std::vector<std::string>>& stages);

// Which units a chain cuts: the top-level layers; or also the nodes of every top-level graph
// that takes one input and makes one output, so that a graph's branches can go on stages of
// their own; or those and the layers of every top-level residual block ("block3.body.conv1",
// "block3.shortcut.conv1", and "block3.add" joining the two: Residual::join), so that a
// pipeline can end a stage inside a block to balance its stages. A placement opens a graph or
// a block by naming its units.
enum class Opening { layers, graphs, blocks };
// What the engine's automatic split cuts: a graph's nodes, not a block's layers. It weighs
// compute alone, and a cut inside a block sends two tensors (the skip and the body's) where one
// between blocks sends one: only the planner's simulation weighs that.
constexpr Opening kAutoSplitOpening = Opening::graphs;
// What the planner cuts: blocks too, each layout's best split between top-level layers and its
// best one anywhere simulated, the faster kept.
constexpr Opening kPlanOpening = Opening::blocks;

// Stages named as parallel.placement takes them: stage s holds units [ranges[s].first,
// ranges[s].second) of `names`, each unit part of the top-level layer `owners[u]` names ("" for
// a top-level layer itself). An opened layer all of whose units are on one stage is named once,
// by its own name, so that a placement opens only the graphs and blocks a stage boundary falls
// in.
using UnitRange = std::pair<std::size_t, std::size_t>;
std::vector<std::vector<std::string>> compact_stage_names(const std::vector<std::string>& names,
                                                          const std::vector<std::string>& owners,
                                                          const std::vector<UnitRange>& ranges);

// A chain: stage s runs units [bounds[s], bounds[s + 1]) of the net's units in its order (bounds
// from 0 to chain_unit_count, increasing). With Opening::layers its graph is
// chain_stage_graph(bounds)'s, edge for edge; with graphs opened, the stages of a range of a
// graph's nodes read what they read, so two branches cut apart run at once (the ranges follow
// the order the graph's nodes were added in, a topological one: a graph whose branches were
// added one after the other can have a branch per stage).
UnitPlacement chain_units(Sequential& net, const std::vector<std::size_t>& bounds,
                          Opening opening = Opening::layers);
std::size_t chain_unit_count(Sequential& net, Opening opening);
// Every unit of the net in one stage: what the profiler and the cost models weigh unit by unit.
UnitPlacement all_units(Sequential& net, Opening opening = Opening::layers);
// Whether `opening` opens anything in `net`.
bool opens_units(Sequential& net, Opening opening);

}  // namespace tandem
