// Planning from Lua: core.plan_topology (check a topology and describe it), core.plan_search
// (rank every layout by simulation) and core.plan_simulate (one plan's simulated step). The
// Lua side (lua/tandem/plan.lua, T.plan) loads topology files and prints the tables.
//
// The options of core.plan_costs, plan_search, plan_simulate (and each plan it takes) and
// costs:layers are checked against their schemas (core/plan/plan_schema.h) in one loop each,
// before anything is profiled; a topology is a plain table read here:
//   topology = {name =, nodes = {{name =, parent =, link =, device =, memory =, threads =,
//               cores =, count =}, ...}, peers = {{'gpu0', 'gpu1', link = 'nvlink2', count = 2},
//               ...}, fabrics = {{name = 'nvswitch', link = 'nvlink3', count = 12,
//                           devices = {'gpu0', ...}}, ...}}
#include <algorithm>
#include <cmath>
#include <thread>

#include "base/error.h"
#include "base/format.h"
#include "bind_parallel.h"
#include "binding.h"
#include "check.h"
#include "device/cpu/cpu_device.h"
#include "objects.h"
#include "option_table.h"
#include "plan/analytic_costs.h"
#include "plan/collectives.h"
#include "plan/measured_costs.h"
#include "plan/plan_schema.h"
#include "plan/planner.h"
#include "wrap.h"

namespace tandem::lua {
namespace {

// Field `key` of the table at absolute index `table`, pushed; returns its Lua type.
int get(lua_State* L, int table, const char* key) {
    lua_getfield(L, table, key);
    return lua_type(L, -1);
}

// Where a field is, for messages: "topology 'dgx1': node 'gpu0': ".
std::string string_field(lua_State* L, int table, const char* key, const std::string& where,
                         const std::string& fallback = "") {
    std::string value = fallback;
    if (get(L, table, key) == LUA_TSTRING)
        value = lua_tostring(L, -1);
    else if (!lua_isnil(L, -1))
        throw ConfigError(where + "field '" + key + "' must be a string, got " +
                          number_or_type(L, -1));
    lua_pop(L, 1);
    return value;
}

// An integer field in [low, high]: a fraction, a string or a value out of range is refused,
// naming the topology, the node and the field (issue 19: 1.5 threads were read as 1).
int int_field(lua_State* L, int table, const char* key, int fallback, int low, int high,
              const std::string& where) {
    int value = fallback;
    const int type = get(L, table, key);
    if (type != LUA_TNIL) {
        const double v = lua_tonumber(L, -1);
        if (type != LUA_TNUMBER || v != std::floor(v) || v < low || v > high)
            throw ConfigError(where + "field '" + key + "' must be an integer in [" +
                              std::to_string(low) + ", " + std::to_string(high) + "], got " +
                              number_or_type(L, -1));
        value = static_cast<int>(v);
    }
    lua_pop(L, 1);
    return value;
}

std::size_t bytes_field(lua_State* L, int table, const char* key, const std::string& where) {
    std::size_t value = 0;
    const int type = get(L, table, key);
    const double v = lua_tonumber(L, -1);
    if (type == LUA_TNUMBER && v == std::floor(v) && v >= 1 && v < 9.0e15)
        value = static_cast<std::size_t>(v);
    else if (type == LUA_TSTRING) {
        try {
            value = parse_bytes(lua_tostring(L, -1));
        } catch (const ConfigError& e) {
            throw ConfigError(where + "field '" + key + "': " + e.what());
        }
    } else if (type != LUA_TNIL)
        throw ConfigError(where + "field '" + key +
                          "' must be a byte count above 0 or a size ('16GB'), got " +
                          number_or_type(L, -1));
    lua_pop(L, 1);
    return value;
}

// Refuses a field of the table at `table` that is not in `known` (a typo such as `thread`
// would otherwise leave the default in place without a word).
void known_fields(lua_State* L, int table, std::initializer_list<const char*> known,
                  const std::string& where) {
    lua_pushnil(L);
    while (lua_next(L, table) != 0) {
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TNUMBER) continue;  // a peer link's two device names
        const std::string key =
            lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : type_name(L, -1);
        bool found = false;
        std::string list;
        for (const char* k : known) {
            found = found || key == k;
            list += std::string(list.empty() ? "" : ", ") + k;
        }
        if (!found) {
            lua_pop(L, 1);
            throw ConfigError(where + "unknown field '" + key + "' (known: " + list + ")");
        }
    }
}

TopologySpec read_topology(lua_State* L, int index) {
    if (!lua_istable(L, index))
        throw ArgError(index, "a topology table expected, got " + type_name(L, index));
    TopologySpec spec;
    spec.name = string_field(L, index, "name", "topology: ", "topology");
    const std::string where = "topology '" + spec.name + "': ";
    known_fields(L, index, {"name", "nodes", "peers", "fabrics", "description", "device_count"},
                 where);
    if (get(L, index, "nodes") != LUA_TTABLE)
        throw ConfigError(where + "'nodes' must be a list of node tables");
    for_each_item(L, lua_gettop(L), [&](int i) {
        const int node = lua_gettop(L);
        if (!lua_istable(L, node))
            throw ConfigError(where + "node " + std::to_string(i) + " is not a table");
        TopologyNodeSpec n;
        const std::string at = where + "node " + std::to_string(i) + ": ";
        n.name = string_field(L, node, "name", at);
        const std::string in = n.name.empty() ? at : where + "node '" + n.name + "': ";
        known_fields(L, node,
                     {"name", "parent", "link", "device", "memory", "threads", "cores", "count"},
                     in);
        n.parent = string_field(L, node, "parent", in);
        n.link = string_field(L, node, "link", in);
        n.device = string_field(L, node, "device", in);
        n.memory_bytes = bytes_field(L, node, "memory", in);
        n.threads = int_field(L, node, "threads", 1, 1, 1024, in);
        n.cores = int_field(L, node, "cores", 0, 0, 1 << 20, in);
        n.count = int_field(L, node, "count", 1, 1, 64, in);
        spec.nodes.push_back(std::move(n));
    });
    lua_pop(L, 1);
    if (get(L, index, "peers") == LUA_TTABLE) {
        for_each_item(L, lua_gettop(L), [&](int i) {
            const int peer = lua_gettop(L);
            PeerLinkSpec p;
            if (!lua_istable(L, peer))
                lua_pushnil(L), lua_pushnil(L);
            else
                lua_rawgeti(L, peer, 1), lua_rawgeti(L, peer, 2);
            if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
                throw ConfigError(where + "peer link " + std::to_string(i) +
                                  " must name two devices: {'gpu0', 'gpu1', link = 'nvlink2'}");
            p.a = lua_tostring(L, -2), p.b = lua_tostring(L, -1);
            lua_pop(L, 2);
            const std::string in = where + "peer link " + p.a + " - " + p.b + ": ";
            known_fields(L, peer, {"link", "count"}, in);
            p.link = string_field(L, peer, "link", in);
            p.count = int_field(L, peer, "count", 1, 1, 64, in);
            spec.peers.push_back(std::move(p));
        });
    }
    lua_pop(L, 1);
    if (get(L, index, "fabrics") == LUA_TTABLE) {
        for_each_item(L, lua_gettop(L), [&](int i) {
            const int table = lua_gettop(L);
            const std::string at = where + "fabric " + std::to_string(i) + ": ";
            if (!lua_istable(L, table))
                throw ConfigError(at +
                                  "must be a table: {name = 'nvswitch', link = 'nvlink3', "
                                  "count = 12, devices = {'gpu0', ...}}");
            FabricSpec f;
            f.name = string_field(L, table, "name", at);
            const std::string in = f.name.empty() ? at : where + "fabric '" + f.name + "': ";
            known_fields(L, table, {"name", "link", "count", "devices", "reduces"}, in);
            f.link = string_field(L, table, "link", in);
            const int reduces = get(L, table, "reduces");
            if (reduces != LUA_TNIL && reduces != LUA_TBOOLEAN)
                throw ConfigError(in + "'reduces' must be true or false, got " +
                                  number_or_type(L, -1));
            f.reduces = lua_toboolean(L, -1) != 0;
            lua_pop(L, 1);
            f.count = int_field(L, table, "count", 1, 1, 64, in);
            if (get(L, table, "devices") != LUA_TTABLE)
                throw ConfigError(in + "'devices' must be a list of device names");
            for_each_item(L, lua_gettop(L), [&](int k) {
                if (lua_type(L, -1) != LUA_TSTRING)
                    throw ConfigError(in + "device " + std::to_string(k) + " must be a name, got " +
                                      number_or_type(L, -1));
                f.devices.push_back(lua_tostring(L, -1));
            });
            lua_pop(L, 1);
            spec.fabrics.push_back(std::move(f));
        });
    } else if (!lua_isnil(L, -1)) {
        throw ConfigError(where + "'fabrics' must be a list of fabric tables");
    }
    lua_pop(L, 1);
    return spec;
}

// A cost model, and the placement of the net it weighs by unit (null: by top-level layer), with
// the units' shapes (for the bytes its edges carry).
struct PlanCosts {
    std::shared_ptr<const CostModel> model;
    std::shared_ptr<const UnitPlacement> placed;
    NetShapes shapes;
    std::shared_ptr<Sequential> net;
    // `placed` is no placement given but the net's units with its graphs and blocks opened, in
    // one stage: what the planner cuts (chain_units with kPlanOpening).
    bool opened = false;

    // Of an opened net: the stage graph of these cuts of its units, edges carrying their bytes.
    StageGraph cut_graph(const std::vector<std::size_t>& cuts, std::int64_t micro_batch) const {
        std::vector<std::size_t> bounds{0};
        bounds.insert(bounds.end(), cuts.begin(), cuts.end());
        bounds.push_back(placed->units.size());
        return placement_graph(chain_units(*net, bounds, kPlanOpening), shapes, micro_batch);
    }
};
using CostsPtr = std::shared_ptr<const PlanCosts>;

// Whether every device of the topology is a CPU: cost = 'auto' profiles them (measured costs).
bool all_cpu(const Topology& topology) {
    for (int i = 0; i < topology.device_count(); ++i)
        if (!topology.device(i).cpu) return false;
    return true;
}

// A new cost model from the options `o` of the table at `args` (checked by its function's
// schema, plan_schema.h): net, sample, placement, cost ('auto': `when_auto`), precision,
// momentum, and for measured costs layout, seed, warmup, iterations, rounds
// (MeasuredCostModel::prefetch) and cache.
CostsPtr new_cost_model(lua_State* L, int args, const OptionTable& o, const OptionSchema& schema,
                        const std::string& when_auto) {
    if (!o.given("net") || !o.given("sample"))
        throw ConfigError(std::string(schema.function) +
                          ": give the net and its sample's shape (net =, sample =), or a cost "
                          "model from T.plan.costs (costs =)");
    o.push("net");
    auto net = check_sequential_ptr(L, lua_gettop(L));
    lua_pop(L, 1);
    o.push("sample");
    const Shape sample = check_shape(L, lua_gettop(L));
    lua_pop(L, 1);
    auto costs = std::make_shared<PlanCosts>();
    costs->net = net;
    if (o.given("placement")) {
        costs->placed = std::make_shared<const UnitPlacement>(place_units(
            *net, read_placement(L, args, "placement",
                                 std::string(schema.function) + ": option 'placement'")));
    } else if (opens_units(*net, kPlanOpening)) {
        // A graph's nodes and a block's layers weighed one by one, so a search can put branches
        // apart and end a stage inside a block.
        costs->placed = std::make_shared<const UnitPlacement>(all_units(*net, kPlanOpening));
        costs->opened = true;
    }
    costs->shapes =
        costs->placed ? net_shapes(*net, sample, *costs->placed) : net_shapes(*net, sample);
    const bool momentum = o.flag("momentum");
    std::string kind = o.text("cost");
    if (kind == "auto") kind = when_auto;
    const std::string precision = o.text("precision");
    if (kind == "analytic") {
        costs->model = std::make_shared<AnalyticCostModel>(costs->shapes, momentum,
                                                           parse_precision(precision));
        return costs;
    }
    const Precision computes_in = parse_precision(precision);
    if (computes_in != Precision::fp32 && computes_in != Precision::bf16)
        throw ConfigError(std::string(schema.function) + ": precision '" + precision +
                          "' is for GPU models (cost = 'analytic'); measured CPU costs are fp32 "
                          "or bf16");
    // Measured costs time the net as it will train: in this precision, which it keeps (as
    // T.Engine's precision sets it).
    net->set_precision(computes_in);
    ProfileOptions po;
    po.layout = parse_layout(o.text("layout"));
    po.seed = static_cast<std::uint64_t>(o.integer("seed"));
    po.warmup = static_cast<int>(o.integer("warmup"));
    po.iterations = static_cast<int>(o.integer("iterations"));
    const int rounds = static_cast<int>(o.integer("rounds"));
    // The lower quartile: what a layer costs when nothing else on the machine gets in its way.
    po.quantile = 0.25;
    costs->model = measured_cost_model(net, sample, momentum, po, rounds, costs->placed,
                                       parse_cache_use(o.text("cache")));
    return costs;
}

// The cost model of a search or simulation on `topologies`: `costs` (from T.plan.costs, shared
// with other calls: one set of profiles) when given, a new one otherwise (cost 'auto': measured
// on a CPU machine).
CostsPtr cost_model(lua_State* L, int args, const OptionTable& o, const OptionSchema& schema,
                    const std::vector<Topology>& topologies) {
    if (!o.given("costs"))
        return new_cost_model(L, args, o, schema,
                              all_cpu(topologies.front()) ? "measured" : "analytic");
    o.push("costs");
    CostsPtr costs = check_box<CostsPtr>(L, lua_gettop(L), kPlanCostsType, "costs");
    lua_pop(L, 1);
    return costs;
}

const char* cost_kind(const CostModel& costs) {
    return dynamic_cast<const MeasuredCostModel*>(&costs) ? "measured" : "analytic";
}

// t[key] = a list of tables on the table on top, one per item, each filled by `fields`.
template <class T, class Fields>
void set_records(lua_State* L, const char* key, const std::vector<T>& items, Fields fields) {
    lua_createtable(L, static_cast<int>(items.size()), 0);
    for (std::size_t i = 0; i < items.size(); ++i) {
        lua_newtable(L);
        fields(items[i]);
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    lua_setfield(L, -2, key);
}

// The machine figures a measured cost model rests on, as field `calibration` of the table on
// top: copy_gbs, handoff_ms, busy_handoff_ms, crowded_handoff_ms, profiles = {{threads, batch,
// step_ms}, ...}, contention = {{cores, batch, all, over (0: not measured)}, ...}, all_reduce =
// {{ranks, algorithm, latency_ms, ms_per_mb}, ...} and updates = {{busy, slowdown}, ...};
// cache_file (with cache = 'reuse' or 'refresh'), reused (how many of these figures an earlier run
// measured) and cached_at (when). Nothing for the analytic model.
void set_calibration(lua_State* L, const CostModel& costs) {
    const auto* measured = dynamic_cast<const MeasuredCostModel*>(&costs);
    if (!measured) return;
    using C = MeasuredCostModel::Calibration;
    const C c = measured->calibration();
    lua_createtable(L, 0, 8);
    set_number(L, "copy_gbs", c.machine.copy_gbs);
    set_number(L, "handoff_ms", c.machine.handoff_ms);
    set_number(L, "busy_handoff_ms", c.machine.busy_handoff_ms);
    set_number(L, "crowded_handoff_ms", c.machine.crowded_handoff_ms);
    set_number(L, "cache_bytes", static_cast<double>(c.cache_bytes));
    if (!c.cache_file.empty()) set_string(L, "cache_file", c.cache_file);
    set_number(L, "reused", static_cast<double>(c.reused));
    if (c.reused > 0) set_string(L, "cached_at", c.cached_at);
    set_records(L, "profiles", c.profiles, [&](const C::Profile& p) {
        set_number(L, "threads", p.threads);
        set_number(L, "batch", static_cast<double>(p.batch));
        set_number(L, "step_ms", p.step_ms);
    });
    set_records(L, "contention", c.contention, [&](const C::Contention& k) {
        set_number(L, "cores", k.cores);
        set_number(L, "batch", static_cast<double>(k.batch));
        set_number(L, "all", k.all);
        set_number(L, "over", k.over);
    });
    set_records(L, "all_reduce", c.all_reduce, [&](const C::AllReduce& r) {
        set_number(L, "ranks", r.ranks);
        set_string(L, "algorithm", std::string(reduce_algorithm_name(r.algorithm)));
        set_number(L, "latency_ms", r.latency_ms);
        set_number(L, "ms_per_mb", r.ms_per_mb);
    });
    set_records(L, "updates", c.updates, [&](const C::Update& u) {
        set_number(L, "busy", u.busy);
        set_number(L, "slowdown", u.slowdown);
    });
    lua_setfield(L, -2, "calibration");
}

void push_simulation(lua_State* L, const Simulation& s) {
    set_number(L, "step_ms", s.step_ms);
    set_number(L, "images_per_s", s.images_per_s);
    set_number(L, "compute_ms", s.compute_ms);
    set_number(L, "bubble", s.bubble);
    set_number(L, "exposed_comm_ms", s.exposed_comm_ms);
    set_number(L, "update_ms", s.update_ms);
    set_number(L, "crowded_ms", s.crowded_ms);
    set_number(L, "peak_bytes", static_cast<double>(s.peak_bytes()));
    lua_createtable(L, static_cast<int>(s.devices.size()), 0);
    for (std::size_t i = 0; i < s.devices.size(); ++i) {
        const auto& d = s.devices[i];
        lua_createtable(L, 0, 6);
        set_string(L, "name", d.name);
        set_number(L, "group", d.group + 1);
        set_number(L, "stage", d.stage + 1);
        set_number(L, "peak_bytes", static_cast<double>(d.peak_bytes));
        set_number(L, "cap", static_cast<double>(d.cap));
        set_number(L, "busy_ms", d.busy_ms);
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    lua_setfield(L, -2, "devices");
}

void push_plan(lua_State* L, const RankedPlan& r, const PlanSearch& search) {
    const Plan& p = r.plan;
    lua_createtable(L, 0, 20);
    set_number(L, "groups", p.groups);
    set_number(L, "stages", p.stages);
    set_number(L, "micro_batches", p.micro_batches);
    set_string(L, "pipeline", std::string(pipeline_schedule_name(p.schedule)));
    set_string(L, "schedule",
               std::string(pipeline_schedule_name(p.schedule)));  // the old name, one release
    lua_pushboolean(L, p.recompute);
    lua_setfield(L, -2, "recompute");
    set_string(L, "device_order", p.device_order);
    set_string(L, "label", p.label());
    set_string(L, "topology", r.topology);
    set_number(L, "threads", r.threads);
    set_string(L, "device", r.model == "cpu" ? "cpu" : "cuda");
    set_string(L, "model", r.model);
    set_number(L, "cores", r.cores);
    // Cuts between top-level layers (parallel.split), or each stage's names when a stage ends
    // inside a graph or a block (parallel.placement).
    const bool placed = search.cuts_inside(r);
    const std::vector<std::string> split =
        placed ? std::vector<std::string>{} : search.split_names(r);
    lua_createtable(L, static_cast<int>(split.size()), 0);
    for (std::size_t i = 0; i < split.size(); ++i) {
        lua_pushstring(L, split[i].c_str());
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    lua_setfield(L, -2, "split");
    if (placed) {
        // Each stage's units: what the engine's parallel.placement takes.
        const auto stages = search.stage_names(r);
        lua_createtable(L, static_cast<int>(stages.size()), 0);
        for (std::size_t s = 0; s < stages.size(); ++s) {
            lua_createtable(L, static_cast<int>(stages[s].size()), 0);
            for (std::size_t i = 0; i < stages[s].size(); ++i) {
                lua_pushstring(L, stages[s][i].c_str());
                lua_rawseti(L, -2, static_cast<int>(i + 1));
            }
            lua_rawseti(L, -2, static_cast<int>(s + 1));
        }
        lua_setfield(L, -2, "placement");
    }
    lua_createtable(L, static_cast<int>(p.devices.size()), 0);
    for (std::size_t i = 0; i < p.devices.size(); ++i) {
        lua_pushinteger(L, p.devices[i]);
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    lua_setfield(L, -2, "device_indices");  // `devices` is the simulation's, per device
    // A parameter-server plan is a baseline the engine cannot run: no plan file for it.
    if (!r.plan.parameter_server) set_string(L, "lua", plan_to_lua(r, search));
    push_simulation(L, r.simulation);
}

PlannerOptions planner_options(const OptionTable& args) {
    PlannerOptions o;
    o.batch = args.integer("batch");
    o.devices = static_cast<int>(args.integer("devices"));
    const PlanAlgorithm algorithm = parse_plan_algorithm(args.text("algorithm"));
    o.algorithm = algorithm.algorithm;
    o.parameter_server = algorithm.parameter_server;
    o.nccl_auto = algorithm.nccl_auto;
    o.bucket_bytes = static_cast<std::size_t>(args.integer("bucket_bytes"));
    o.overlap_backward = args.flag("overlap");
    o.simpler_within = args.number("simpler_within");
    o.micro_batches.clear();
    for (const double m : args.numbers("micro_batches"))
        o.micro_batches.push_back(static_cast<int>(m));
    return o;
}

// The topologies of the arguments: `topology = {...}` or `topologies = {{...}, {...}}`.
std::vector<Topology> topologies(lua_State* L, int args) {
    std::vector<Topology> out;
    if (get(L, args, "topologies") == LUA_TTABLE) {
        for_each_item(L, lua_gettop(L),
                      [&](int) { out.emplace_back(read_topology(L, lua_gettop(L))); });
    }
    lua_pop(L, 1);
    if (get(L, args, "topology") == LUA_TTABLE) out.emplace_back(read_topology(L, lua_gettop(L)));
    lua_pop(L, 1);
    if (out.empty())
        throw ConfigError("planning needs a topology (topology = {...} or topologies = {...})");
    return out;
}

// core.plan_costs{net =, sample =, cost =, momentum =, layout =, seed =, warmup =, iterations =}
// -> a cost model to pass to several searches and simulations (costs =), so that they weigh
// plans with the same profiles and measured figures, each taken once.
int plan_costs(lua_State* L) {
    const OptionSchema& schema = plan_costs_option_schema();
    const OptionTable o(L, 1, schema);
    // cost = 'auto': analytic for a GPU topology, measured for a CPU one or none.
    bool measured = true;
    if (o.given("topology")) {
        o.push("topology");
        measured = all_cpu(Topology(read_topology(L, lua_gettop(L))));
        lua_pop(L, 1);
    }
    push_box(L, kPlanCostsType,
             new_cost_model(L, 1, o, schema, measured ? "measured" : "analytic"));
    return 1;
}

// costs:calibration() -> the measured figures so far (nil for analytic costs).
int plan_costs_calibration(lua_State* L) {
    const CostsPtr& costs = check_box<CostsPtr>(L, 1, kPlanCostsType, "costs");
    lua_newtable(L);
    set_calibration(L, *costs->model);
    lua_getfield(L, -1, "calibration");
    return 1;
}

// costs:layers{device =, batch =, threads =} -> {{name, forward_ms, backward_ms, kernels =
// {{name, kind, class, flops, bytes, rows, columns, inner (as a matrix product), forward_ms,
// backward_ms}, ...}}, ...}: what the model says each
// layer (and, for analytic costs, each of its kernels) costs a micro-batch of `batch` on a
// device of model `device` (analytic; default 'cpu' for measured costs, with `threads`).
int plan_costs_layers(lua_State* L) {
    const CostsPtr& costs = check_box<CostsPtr>(L, 1, kPlanCostsType, "costs");
    const OptionTable o(L, 2, plan_layers_option_schema());
    const auto* analytic = dynamic_cast<const AnalyticCostModel*>(costs->model.get());
    TopologyDevice device;
    device.model = o.given("device") ? o.text("device") : analytic ? "H100" : "cpu";
    device.name = device.model;
    device.cpu = device.model == "cpu";
    device.threads = static_cast<int>(o.integer("threads"));
    if (analytic && device.cpu)
        throw ConfigError("costs:layers: analytic costs time GPU models, not 'cpu'");
    const std::int64_t batch = o.integer("batch");
    const auto layers = costs->model->layer_costs(device, batch);
    lua_createtable(L, static_cast<int>(layers.size()), 0);
    for (std::size_t i = 0; i < layers.size(); ++i) {
        lua_newtable(L);
        set_string(L, "name", layers[i].name);
        set_number(L, "forward_ms", layers[i].forward_ms);
        set_number(L, "backward_ms", layers[i].backward_ms);
        if (analytic) {
            const auto& leaves = costs->shapes.layers[i].leaves;
            const auto times = analytic->kernel_times(i, device, batch);
            set_records(L, "kernels", leaves, [&](const KernelShape& k) {
                const KernelTime& t = times[static_cast<std::size_t>(&k - leaves.data())];
                set_string(L, "name", k.name);
                set_string(L, "kind", k.kind);
                set_string(L, "class", std::string(kernel_class_name(k.kernel_class)));
                set_number(L, "flops", k.flops * static_cast<double>(batch));
                // Moved in float32: activations grow with the batch, weights do not.
                set_number(L, "bytes",
                           static_cast<double>(k.activation_bytes) * static_cast<double>(batch) +
                               static_cast<double>(k.parameter_bytes));
                set_number(L, "forward_ms", t.forward_ms);
                set_number(L, "backward_ms", t.backward_ms);
                set_number(L, "rows", static_cast<double>(k.rows * batch));
                set_number(L, "columns", static_cast<double>(k.columns));
                set_number(L, "inner", static_cast<double>(k.inner));
            });
        }
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    return 1;
}

int plan_costs_tostring(lua_State* L) {
    const CostsPtr& costs = check_box<CostsPtr>(L, 1, kPlanCostsType, "costs");
    lua_pushfstring(L, "PlanCosts(%s)", cost_kind(*costs->model));
    return 1;
}

const luaL_Reg kCostsMethods[] = {
    {"calibration", wrap<plan_costs_calibration>},
    {"layers", wrap<plan_costs_layers>},
    {nullptr, nullptr},
};

// core.plan_topology(spec) -> description text, device count; raises on bad input.
int plan_topology(lua_State* L) {
    const Topology t(read_topology(L, 1));
    lua_pushstring(L, t.describe().c_str());
    lua_pushinteger(L, t.device_count());
    return 2;
}

// core.plan_search{...} -> {plans = {...}, table = text, considered =, over_memory =, profiles =}
int plan_search(lua_State* L) {
    const OptionSchema& schema = plan_search_option_schema();
    const OptionTable args(L, 1, schema);
    const auto tops = topologies(L, 1);
    const auto plan_costs = cost_model(L, 1, args, schema, tops);
    TANDEM_CHECK_AS(ConfigError, !plan_costs->placed || plan_costs->opened)
        << "T.plan.search chooses the stages itself; to weigh a placement, simulate it "
           "(T.plan.simulate)";
    const CostModel* costs = plan_costs->model.get();
    PlannerOptions o = planner_options(args);
    if (plan_costs->opened) {
        o.stage_graph = [&](const std::vector<std::size_t>& cuts, std::int64_t micro_batch) {
            return plan_costs->cut_graph(cuts, micro_batch);
        };
        for (const NetUnit& unit : plan_costs->placed->units)
            o.unit_owners.push_back(unit.node < 0 ? std::string()
                                                  : plan_costs->net->at(unit.layer).name());
    }
    PlanSearch search;
    for (const auto& t : tops) merge_plans(search, search_plans(t, *costs, o));
    const std::string trace = args.text("trace");
    // Which ranked plan the trace shows (1: the best).
    const std::int64_t traced = args.integer("trace_plan");
    if (!trace.empty() && !search.plans.empty()) {
        TANDEM_CHECK_AS(ConfigError, static_cast<std::size_t>(traced) <= search.plans.size())
            << "T.plan.search: trace_plan = " << traced << ", but " << search.plans.size()
            << " plan(s) were ranked";
        const RankedPlan& chosen = search.plans[static_cast<std::size_t>(traced - 1)];
        for (const auto& t : tops)
            if (t.name() == chosen.topology)
                write_simulated_trace(simulate(chosen.plan, t, *costs, true), trace);
    }
    lua_createtable(L, 0, 5);
    lua_createtable(L, static_cast<int>(search.plans.size()), 0);
    for (std::size_t i = 0; i < search.plans.size(); ++i) {
        push_plan(L, search.plans[i], search);
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    lua_setfield(L, -2, "plans");
    set_string(L, "table", format_plans(search, static_cast<std::size_t>(args.integer("top"))));
    set_number(L, "considered", search.considered);
    set_number(L, "over_memory", search.over_memory);
    set_string(L, "cost", cost_kind(*costs));
    set_calibration(L, *costs);
    return 1;
}

// Cuts after top-level layers (names or 1-based indices, as parallel.split takes them) as cuts
// after units of an opened net: a layer opened into units ends with its last unit. Unit names
// ('g.a1', 'block3.body.conv1') cut inside a layer and stay as they are.
std::vector<CutSpec> unit_cuts(const std::vector<CutSpec>& specs, const PlanCosts& costs) {
    const std::vector<NetUnit>& units = costs.placed->units;
    auto last_unit = [&](std::size_t layer) {  // 1-based, as a cut index
        std::int64_t last = 0;
        for (std::size_t u = 0; u < units.size(); ++u)
            if (units[u].layer == layer) last = static_cast<std::int64_t>(u + 1);
        return last;
    };
    std::vector<CutSpec> out;
    for (const CutSpec& spec : specs) {
        if (const auto* index = std::get_if<std::int64_t>(&spec)) {
            const bool layer = *index >= 1 && static_cast<std::size_t>(*index) <= costs.net->size();
            out.emplace_back(layer ? last_unit(static_cast<std::size_t>(*index - 1)) : *index);
            continue;
        }
        const std::string& name = std::get<std::string>(spec);
        std::int64_t cut = 0;
        for (std::size_t i = 0; i < costs.net->size() && cut == 0; ++i)
            if (costs.net->at(i).name() == name) cut = last_unit(i);
        if (cut > 0)
            out.emplace_back(cut);
        else
            out.push_back(spec);
    }
    return out;
}

// The cuts of a plan's `split`: layer names, or 1-based layer numbers (whole ones: 1.5 is no
// layer); `option` names it in the message for anything else.
std::vector<CutSpec> read_split(lua_State* L, const OptionTable& plan, const std::string& option) {
    const auto bad = [&](const std::string& got) {
        OptionSpec split = *plan_table_option_schema().find("split");
        split.name = option;
        throw_bad_option(plan_table_option_schema(), split, got);
    };
    std::vector<CutSpec> specs;
    plan.push("split");
    if (lua_istable(L, -1)) {
        for_each_item(L, lua_gettop(L), [&](int i) {
            const double x = lua_tonumber(L, -1);
            if (lua_type(L, -1) == LUA_TNUMBER && std::isfinite(x) && x == std::floor(x))
                specs.emplace_back(static_cast<std::int64_t>(x));
            else if (lua_type(L, -1) == LUA_TSTRING)
                specs.emplace_back(std::string(lua_tostring(L, -1)));
            else
                bad("a list whose entry " + std::to_string(i) + " is " + number_or_type(L, -1));
        });
    }
    lua_pop(L, 1);
    return specs;
}

// One plan table (at absolute index `pt`) of core.plan_simulate, read and checked against its
// schema, its options named after `prefix` ("plan.", "plans[2]."); `args` are the simulation's
// own options (the batch and the all-reduce every plan shares).
Plan read_plan(lua_State* L, int pt, const std::string& prefix, const OptionTable& args,
               const Topology& topology, const PlanCosts& plan_costs,
               const std::vector<std::string>& names) {
    const CostModel& costs = *plan_costs.model;
    const OptionTable p(L, pt, plan_table_option_schema(), prefix);
    Plan plan;
    plan.groups = static_cast<int>(p.integer("groups"));
    plan.stages = static_cast<int>(p.integer("stages"));
    plan.micro_batches = static_cast<int>(p.integer("micro_batches"));
    // `schedule`: the pipeline's old name, still read for one release.
    plan.schedule = parse_pipeline_schedule(
        p.given("pipeline") || !p.given("schedule") ? p.text("pipeline") : p.text("schedule"));
    plan.recompute = p.flag("recompute");
    plan.batch = args.integer("batch");
    const PlanAlgorithm algorithm = parse_plan_algorithm(args.text("algorithm"));
    plan.algorithm = algorithm.algorithm;
    plan.parameter_server = algorithm.parameter_server;
    plan.nccl_auto = algorithm.nccl_auto;
    plan.bucket_bytes = static_cast<std::size_t>(args.integer("bucket_bytes"));
    plan.overlap_backward = args.flag("overlap");
    const std::vector<CutSpec> specs = read_split(L, p, prefix + "split");
    if (plan_costs.placed && !plan_costs.opened) {
        // The costs' placement says what each stage runs (T.plan.simulate's placement).
        const int stages = static_cast<int>(plan_costs.placed->graph.stages.size());
        TANDEM_CHECK_AS(ConfigError, specs.empty() && plan.stages == stages)
            << "T.plan.simulate: the placement has " << stages
            << " stages; give the plan stages = " << stages << " and no split";
        plan.graph = placement_graph(*plan_costs.placed, plan_costs.shapes, plan.micro_batch());
    } else if (specs.empty() && plan.stages > 1) {
        // No split given: the partitioner's, as `tandem plan` would choose it.
        PartitionOptions po;
        po.stages = plan.stages, po.schedule = plan.schedule, po.micro_batches = plan.micro_batches;
        po.recompute = {plan.recompute};
        po.caps = {topology.device(0).usable_bytes()};
        plan.cuts =
            best_partition(costs.layer_costs(topology.device(0), plan.micro_batch()), po).cuts;
    } else {
        plan.cuts = parse_cuts(plan_costs.opened ? unit_cuts(specs, plan_costs) : specs, names,
                               plan.stages);
    }
    if (p.given("devices"))
        for (const double d : p.numbers("devices")) plan.devices.push_back(static_cast<int>(d));
    return plan;
}

// The plan's stages as a graph when its cuts fall among an opened graph's units.
void cut_units(Plan& plan, const PlanCosts& costs) {
    if (!costs.opened || plan.stages == 1) return;
    plan.graph = costs.cut_graph(plan.cuts, plan.micro_batch());
    plan.cuts.clear();
}

// Pushes {step_ms, ..., devices, split} for one simulated plan.
void push_simulated(lua_State* L, const Simulation& s, const std::vector<std::size_t>& cuts,
                    const std::vector<std::string>& names) {
    lua_createtable(L, 0, 10);
    push_simulation(L, s);
    lua_createtable(L, static_cast<int>(cuts.size()), 0);
    for (std::size_t i = 0; i < cuts.size(); ++i) {
        lua_pushstring(L, names.at(cuts[i] - 1).c_str());
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    lua_setfield(L, -2, "split");
}

// core.plan_simulate{..., plan = {groups =, stages =, micro_batches =, schedule =, recompute =,
// split = {names or 1-based indices}, devices = {topology device indices, 0-based}}}
// -> {step_ms, images_per_s, bubble, exposed_comm_ms, compute_ms, update_ms, peak_bytes, devices,
// split} With plans = {{...}, {...}} instead: a list of those, every plan weighed with the same
// profiles (one cost model), so that they compare on equal terms.
int plan_simulate(lua_State* L) {
    const OptionSchema& schema = plan_simulate_option_schema();
    const OptionTable args(L, 1, schema);
    // The plans to run: plans = {{...}, ...}, or plan = {...}; each with the prefix naming its
    // options in messages.
    std::vector<std::string> prefixes;
    const bool listed = args.given("plans");
    if (listed) {
        args.push("plans");
        for_each_item(L, lua_gettop(L), [&](int i) {
            if (!lua_istable(L, -1))
                throw_bad_option(
                    schema, *schema.find("plans"),
                    "a list whose entry " + std::to_string(i) + " is " + number_or_type(L, -1));
            prefixes.push_back("plans[" + std::to_string(i) + "].");
        });
        lua_pop(L, 1);
    } else if (args.given("plan")) {
        prefixes.push_back("plan.");
    } else {
        throw ConfigError(
            "T.plan.simulate needs plan = {groups =, stages =, ...} or plans = {{...}, ...}");
    }
    // Every plan's micro-batch size, measured together before any plan is read (prefetch); the
    // plans are checked here, before anything is profiled.
    std::vector<std::int64_t> sizes{1};
    const std::int64_t batch = args.integer("batch");
    args.push(listed ? "plans" : "plan");
    for (std::size_t i = 0; i < prefixes.size(); ++i) {
        if (listed) lua_rawgeti(L, -1, static_cast<int>(i + 1));
        const OptionTable p(L, -1, plan_table_option_schema(), prefixes[i]);
        sizes.push_back(
            std::max<std::int64_t>(1, batch / p.integer("groups") / p.integer("micro_batches")));
        if (listed) lua_pop(L, 1);
    }
    lua_pop(L, 1);
    const auto tops = topologies(L, 1);
    const auto costs = cost_model(L, 1, args, schema, tops);
    const Topology& topology = tops.front();
    const CostModel& model = *costs->model;
    if (topology.device(0).cpu) model.prefetch(topology.device(0), sizes);
    std::vector<std::string> names;
    for (const auto& c : model.layer_costs(topology.device(0), 1)) names.push_back(c.name);
    const std::string trace = args.text("trace");
    // Pushes the simulation of plan i, whose table is at `pt`.
    const auto run = [&](int pt, std::size_t i) {
        Plan plan = read_plan(L, pt, prefixes[i], args, topology, *costs, names);
        const std::vector<std::size_t> cuts = plan.cuts;
        cut_units(plan, *costs);
        const Simulation s = simulate(plan, topology, model, !trace.empty());
        if (!trace.empty()) write_simulated_trace(s, trace);
        push_simulated(L, s, cuts, names);
        set_calibration(L, model);
    };
    args.push(listed ? "plans" : "plan");
    const int given = lua_gettop(L);
    if (!listed) {
        run(given, 0);
        return 1;
    }
    lua_createtable(L, static_cast<int>(prefixes.size()), 0);
    const int out = lua_gettop(L);
    for (std::size_t i = 0; i < prefixes.size(); ++i) {
        lua_rawgeti(L, given, static_cast<int>(i + 1));
        run(lua_gettop(L), i);
        lua_rawseti(L, out, static_cast<int>(i + 1));
        lua_pop(L, 1);
    }
    return 1;
}

// core.plan_all_reduce(topology, bytes, n, algorithm) -> ms, what ran: one all-reduce of `bytes`
// among the topology's first n devices (or with 'server', the parameter-server baseline's
// exchange), alone, as the simulator plays a bucket (bench/gpu_scaling.lua compares it with
// nccl-tests' bus bandwidth).
int plan_all_reduce(lua_State* L) {
    const Topology t(read_topology(L, 1));
    const double bytes = luaL_checknumber(L, 2);
    const auto n = static_cast<int>(luaL_checkinteger(L, 3));
    TANDEM_CHECK_AS(ConfigError, bytes >= 1 && bytes < 9.0e15)
        << "T.plan.all_reduce: bytes must be positive, got " << bytes;
    TANDEM_CHECK_AS(ConfigError, n >= 2 && n <= t.device_count())
        << "T.plan.all_reduce: devices must be in [2, " << t.device_count() << "] on topology '"
        << t.name() << "', got " << n;
    std::vector<int> devices;
    for (int i = 0; i < n; ++i) devices.push_back(i);
    const PlanAlgorithm a = parse_plan_algorithm(luaL_optstring(L, 4, "ring"));
    const auto size = static_cast<std::size_t>(bytes);
    lua_pushnumber(
        L, simulate_all_reduce_ms(t, devices, size, a.algorithm, a.parameter_server, a.nccl_auto));
    // What ran: NCCL's choice with 'auto' ("nvls/Simple"), else the algorithm asked for.
    if (a.nccl_auto)
        lua_pushstring(L, choose_all_reduce(t, devices, size).name().c_str());
    else
        lua_pushstring(L, luaL_optstring(L, 4, "ring"));
    return 2;
}

// core.plan_models() -> the hardware table's device models, the link models (two lists).
int plan_models(lua_State* L) {
    for (const auto& names : {device_model_names(), link_model_names()}) {
        lua_createtable(L, static_cast<int>(names.size()), 0);
        for (std::size_t i = 0; i < names.size(); ++i) {
            lua_pushstring(L, names[i].c_str());
            lua_rawseti(L, -2, static_cast<int>(i + 1));
        }
    }
    return 2;
}

// core.cores(): the machine's logical cores.
int cores(lua_State* L) {
    lua_pushinteger(L, static_cast<lua_Integer>(std::max(1u, std::thread::hardware_concurrency())));
    return 1;
}

const luaL_Reg kPlanFunctions[] = {
    {"cores", wrap<cores>},
    {"plan_topology", wrap<plan_topology>},
    {"plan_search", wrap<plan_search>},
    {"plan_simulate", wrap<plan_simulate>},
    {"plan_costs", wrap<plan_costs>},
    {"plan_models", wrap<plan_models>},
    {"plan_all_reduce", wrap<plan_all_reduce>},
    {nullptr, nullptr},
};

}  // namespace

void register_plan(lua_State* L, int module) {
    define_type(L, module,
                {kPlanCostsType, wrap<release_box<CostsPtr, kPlanCostsType>>, kCostsMethods,
                 wrap<plan_costs_tostring>});
    add_functions(L, module, kPlanFunctions);
}

}  // namespace tandem::lua
