// Measuring: T.profile (per-layer forward/backward times of a net, `tandem bench`), T.now (a
// steady clock for progress bars) and T.MetricsLog (JSON lines).
#include <unistd.h>

#include <chrono>
#include <cmath>

#include "base/thread_times.h"
#include "binding.h"
#include "device/cpu/cpu_peak.h"
#include "io/metrics_log.h"
#include "io/metrics_log_schema.h"
#include "lua_layer.h"
#include "objects.h"
#include "option_table.h"
#include "plan/plan_schema.h"
#include "plan/profiler.h"
#include "wrap.h"

namespace tandem::lua {
namespace {

using LogPtr = std::shared_ptr<MetricsLog>;

// core.profile(net, sample_shape, device, {batch =, warmup =, iterations =, layout =, seed =})
// -> {layers = {{name, kind, options, output, parameters, forward_ms, backward_ms, flops}...},
//     batch, step_ms, update_ms, train_flops, peak_bytes}
int profile(lua_State* L) {
    Sequential& net = check_sequential(L, 1);
    const Shape sample = check_shape(L, 2);
    auto device = check_device(L, 3);
    const OptionTable options(L, 4, profile_option_schema());
    const std::int64_t batch = options.integer("batch");
    ProfileOptions o;
    o.warmup = static_cast<int>(options.integer("warmup"));
    o.iterations = static_cast<int>(options.integer("iterations"));
    o.layout = parse_layout(options.text("layout"));
    o.seed = static_cast<std::uint64_t>(options.integer("seed"));

    CrossEntropy loss;
    const NetProfile p = [&] {  // the device's worker may run layers written in Lua meanwhile
        ScriptLock::Lend lend(script_lock(L));
        return profile_net(net, loss, *device, sample, batch, o);
    }();

    lua_createtable(L, 0, 6);
    lua_createtable(L, static_cast<int>(p.layers.size()), 0);
    for (std::size_t i = 0; i < p.layers.size(); ++i) {
        const LayerProfile& l = p.layers[i];
        lua_createtable(L, 0, 9);
        set_string(L, "name", l.name);
        set_string(L, "kind", l.kind);
        set_string(L, "options", l.options);
        push_shape(L, l.output);
        lua_setfield(L, -2, "output");
        set_number(L, "parameters", static_cast<double>(l.parameters));
        set_number(L, "forward_ms", l.forward_ms);
        set_number(L, "backward_ms", l.backward_ms);
        set_number(L, "flops", l.flops);
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    lua_setfield(L, -2, "layers");
    set_number(L, "batch", static_cast<double>(p.batch));
    set_number(L, "step_ms", p.step_ms);
    set_number(L, "update_ms", p.update_ms);
    set_number(L, "train_flops", p.train_flops);
    set_number(L, "peak_bytes", static_cast<double>(p.peak_bytes));
    set_number(L, "threads", device->threads());
    return 1;
}

// core.now(): seconds on a steady clock (for rates and ETAs; not the time of day).
int now(lua_State* L) {
    const auto t = std::chrono::steady_clock::now().time_since_epoch();
    lua_pushnumber(L, std::chrono::duration<double>(t).count());
    return 1;
}

// core.training_thread_times() -> ran, waited: seconds the training threads have spent on a core
// and waiting for one (base/thread_times.h), totals that only grow; nil where the kernel does not
// count them.
int training_thread_times_now(lua_State* L) {
    const auto times = training_thread_times().sample();
    if (!times) return 0;
    lua_pushnumber(L, times->ran_s);
    lua_pushnumber(L, times->waited_s);
    return 2;
}

// core.cpu_peak([remeasure]): this machine's measured FMA rate and memory bandwidth
// (device/cpu/cpu_peak.h), from its cache file unless remeasure.
int cpu_peak_of_machine(lua_State* L) {
    const CpuPeak p = cpu_peak(lua_toboolean(L, 1));
    lua_newtable(L);
    set_string(L, "model", p.model);
    set_string(L, "isa", p.isa);
    set_number(L, "cores", p.cores);
    set_number(L, "gflops_one_core", p.gflops_one_core);
    set_number(L, "gflops_all_cores", p.gflops_all_cores);
    set_number(L, "bandwidth_gbs", p.bandwidth_gbs);
    set_string(L, "measured_at", p.measured_at);
    set_string(L, "cache_file", p.cache_file);
    return 1;
}

// core.stdout_is_terminal(): whether progress bars may redraw their line.
int stdout_is_terminal(lua_State* L) {
    lua_pushboolean(L, isatty(STDOUT_FILENO));
    return 1;
}

// T.MetricsLog(path [, {append = true, chart = true}]): a JSON-lines log, and with chart its
// curves redrawn beside it at every write; raises when it cannot be opened.
int metrics_log_new(lua_State* L) {
    const std::string path = check_string(L, 1);
    const OptionTable options(L, 2, metrics_log_option_schema());
    push_box(L, kMetricsLogType,
             std::make_shared<MetricsLog>(path, options.flag("append"), options.flag("chart")));
    return 1;
}

// log:write{key = number | string | boolean, ...}: one line, keys sorted.
int metrics_log_write(lua_State* L) {
    auto log = check_box<LogPtr>(L, 1, kMetricsLogType, "metrics log");
    if (!lua_istable(L, 2))
        throw ArgError(2, "a table of metrics expected, got " + type_name(L, 2));
    std::map<std::string, MetricValue> fields;
    lua_pushnil(L);
    while (lua_next(L, 2) != 0) {
        if (lua_type(L, -2) != LUA_TSTRING) throw ArgError(2, "metric names must be strings");
        const std::string key = lua_tostring(L, -2);
        switch (lua_type(L, -1)) {
            case LUA_TNUMBER: {
                const double v = lua_tonumber(L, -1);
                if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9e15)
                    fields[key] = static_cast<std::int64_t>(v);
                else
                    fields[key] = v;
                break;
            }
            case LUA_TBOOLEAN:
                fields[key] = std::string(lua_toboolean(L, -1) ? "true" : "false");
                break;
            case LUA_TSTRING: fields[key] = std::string(lua_tostring(L, -1)); break;
            default: throw ArgError(2, "metric '" + key + "' must be a number, string or boolean");
        }
        lua_pop(L, 1);
    }
    log->write(std::vector<std::pair<std::string, MetricValue>>(fields.begin(), fields.end()));
    return 0;
}

int metrics_log_tostring(lua_State* L) {
    auto log = check_box<LogPtr>(L, 1, kMetricsLogType, "metrics log");
    lua_pushstring(L, ("MetricsLog(" + log->path() + ")").c_str());
    return 1;
}

const luaL_Reg kLogMethods[] = {
    {"write", wrap<metrics_log_write>},
    {nullptr, nullptr},
};

const luaL_Reg kProfileFunctions[] = {
    {"profile", wrap<profile>},
    {"now", wrap<now>},
    {"training_thread_times", wrap<training_thread_times_now>},
    {"cpu_peak", wrap<cpu_peak_of_machine>},
    {"stdout_is_terminal", wrap<stdout_is_terminal>},
    {"metrics_log", wrap<metrics_log_new>},
    {nullptr, nullptr},
};

}  // namespace

void register_profile(lua_State* L, int module) {
    define_type(L, module,
                {kMetricsLogType, wrap<release_box<LogPtr, kMetricsLogType>>, kLogMethods,
                 wrap<metrics_log_tostring>});
    add_functions(L, module, kProfileFunctions);
}

}  // namespace tandem::lua
