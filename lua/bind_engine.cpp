// tandem.Engine, tandem.Optimizer and tandem.Schedule: training from a recipe.
//
//   T.Engine{net =, loss =, devices =, optim =, schedule =, seed =, layout =}   (engine.lua
//   checks the options and calls core.engine_new with plain values)
//   engine:step(images, targets) -> {loss =, accuracy =, samples =, lr = [, grad_norm =] [,
//   added_loss =]} engine:evaluate_batch(images, targets) -> {loss =, correct =, count =}   (sums)
//   (accuracy and correct only where the loss has an accuracy: not MSE's)
//   engine:save(path [, metadata]) ; engine:load(path) -> metadata | nil, message
//   T.optim.SGD{lr =, momentum =, dampening =, weight_decay =, nesterov =, clip_norm =}
//   T.optim.Adam{lr =, betas =, eps =, weight_decay =, clip_norm =}, T.optim.AdamW{...}
//   T.schedule.Constant/Step/MultiStep/Cosine/Warmup/Hybrid{...}, schedule:lr(step)
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "bind_parallel.h"
#include "binding.h"
#include "engine/engine.h"
#include "io/trace.h"
#include "lua_layer.h"
#include "objects.h"
#include "optim/optim_schema.h"
#include "option_table.h"
#include "parallel/schedule.h"
#include "plan/partitioner.h"
#include "wrap.h"

namespace tandem::lua {
namespace {

using EnginePtr = std::shared_ptr<Engine>;
using SchedulePtr = std::shared_ptr<Schedule>;

EnginePtr& check_engine(lua_State* L, int index) {
    return check_box<EnginePtr>(L, index, kEngineType, "engine");
}

SchedulePtr& check_schedule(lua_State* L, int index) {
    return check_box<SchedulePtr>(L, index, kScheduleType, "schedule");
}

// --- optimizers and schedules ---

float option_float(const OptionTable& o, std::string_view name) {
    return static_cast<float>(o.number(name));
}

// Validates now, so the error points at the constructor.
void push_optimizer(lua_State* L, const OptimizerOptions& o) {
    (void)make_optimizer(o);
    push_box(L, kOptimizerType, o);
}

// core.optim_sgd{lr =, momentum =, dampening =, weight_decay =, nesterov =, clip_norm =}
int optim_sgd(lua_State* L) {
    const OptionTable options(L, 1, sgd_option_schema());
    OptimizerOptions o;
    SgdOptions& s = o.sgd;
    s.lr = option_float(options, "lr");
    s.momentum = option_float(options, "momentum");
    s.dampening = option_float(options, "dampening");
    s.weight_decay = option_float(options, "weight_decay");
    s.nesterov = options.flag("nesterov");
    o.clip_norm = option_float(options, "clip_norm");
    push_optimizer(L, o);
    return 1;
}

// core.optim_adam{lr =, betas =, eps =, weight_decay =, clip_norm =} and core.optim_adamw{...}:
// Adam with weight decay as an L2 penalty, or decoupled (AdamW).
template <bool Decoupled>
int optim_adam(lua_State* L) {
    const OptionTable options(L, 1, Decoupled ? adamw_option_schema() : adam_option_schema());
    OptimizerOptions o;
    o.kind = OptimizerKind::adam;
    AdamOptions& a = o.adam;
    a.lr = option_float(options, "lr");
    const std::vector<double> betas = options.numbers("betas");
    a.beta1 = static_cast<float>(betas.at(0));
    a.beta2 = static_cast<float>(betas.at(1));
    a.eps = option_float(options, "eps");
    a.weight_decay = option_float(options, "weight_decay");
    a.decoupled = Decoupled;
    o.clip_norm = option_float(options, "clip_norm");
    push_optimizer(L, o);
    return 1;
}

int optimizer_tostring(lua_State* L) {
    lua_pushstring(
        L, check_box<OptimizerOptions>(L, 1, kOptimizerType, "optimizer").description().c_str());
    return 1;
}

void push_schedule(lua_State* L, SchedulePtr schedule) {
    push_box(L, kScheduleType, std::move(schedule));
}

// core.schedule_constant(lr), schedule_step(lr, step_size, gamma),
// schedule_multistep(lr, {milestones}, gamma), schedule_cosine(lr, total_steps, min_lr),
// schedule_warmup(after, steps, start_factor), schedule_hybrid(lr, total, switch, min_lr):
// engine.lua names the arguments.
int schedule_constant(lua_State* L) {
    push_schedule(L, std::make_shared<ConstantSchedule>(static_cast<float>(check_number(L, 1))));
    return 1;
}

int schedule_step(lua_State* L) {
    push_schedule(
        L, std::make_shared<StepSchedule>(static_cast<float>(check_number(L, 1)), check_int(L, 2),
                                          static_cast<float>(check_number(L, 3))));
    return 1;
}

int schedule_multistep(lua_State* L) {
    const float lr = static_cast<float>(check_number(L, 1));
    if (!lua_istable(L, 2)) throw ArgError(2, "milestones must be a list of step numbers");
    std::vector<std::int64_t> milestones;
    for (int i = 1; i <= static_cast<int>(lua_objlen(L, 2)); ++i) {
        lua_rawgeti(L, 2, i);
        const double step = lua_tonumber(L, -1);
        if (lua_type(L, -1) != LUA_TNUMBER || !std::isfinite(step) || step != std::floor(step))
            throw ArgError(2,
                           "milestones must be whole step numbers, got " + number_or_type(L, -1));
        milestones.push_back(static_cast<std::int64_t>(lua_tonumber(L, -1)));
        lua_pop(L, 1);
    }
    push_schedule(L, std::make_shared<MultiStepSchedule>(lr, milestones,
                                                         static_cast<float>(check_number(L, 3))));
    return 1;
}

int schedule_cosine(lua_State* L) {
    push_schedule(
        L, std::make_shared<CosineSchedule>(static_cast<float>(check_number(L, 1)), check_int(L, 2),
                                            static_cast<float>(opt_number(L, 3, 0))));
    return 1;
}

int schedule_warmup(lua_State* L) {
    SchedulePtr after = check_schedule(L, 1);
    push_schedule(L, std::make_shared<WarmupSchedule>(after, check_int(L, 2),
                                                      static_cast<float>(opt_number(L, 3, 0))));
    return 1;
}

int schedule_hybrid(lua_State* L) {
    push_schedule(
        L, std::make_shared<HybridCosineLinearSchedule>(
               static_cast<float>(check_number(L, 1)), check_int(L, 2),
               static_cast<float>(opt_number(L, 3, 0.5)), static_cast<float>(opt_number(L, 4, 0))));
    return 1;
}

// schedule:lr(step): the learning rate at `step` (counted from 0).
int schedule_lr(lua_State* L) {
    lua_pushnumber(L, check_schedule(L, 1)->lr(check_int(L, 2)));
    return 1;
}

int schedule_tostring(lua_State* L) {
    lua_pushstring(L, check_schedule(L, 1)->describe().c_str());
    return 1;
}

// --- the engine ---

// core.engine_new(net, loss | nil, {devices...}, sgd, schedule | nil, seed, layout, parallel,
//                 trace (boolean), precision, loss_scale, initial_loss_scale, loss_scale_window)
int engine_new(lua_State* L) {
    EngineOptions o;
    o.net = check_sequential_ptr(L, 1);
    if (!lua_isnoneornil(L, 2)) o.loss = check_loss(L, 2);
    if (!lua_istable(L, 3)) throw ArgError(3, "devices must be a list from T.devices");
    for (int i = 1; i <= static_cast<int>(lua_objlen(L, 3)); ++i) {
        lua_rawgeti(L, 3, i);
        o.devices.push_back(check_device(L, lua_gettop(L)));
        lua_pop(L, 1);
    }
    o.optimizer = check_box<OptimizerOptions>(L, 4, kOptimizerType, "optimizer");
    if (!lua_isnoneornil(L, 5)) o.schedule = check_schedule(L, 5);
    o.seed = static_cast<std::uint64_t>(check_int(L, 6));
    o.layout = check_named(L, 7, parse_layout);
    o.parallel = check_parallel(L, 8, *o.net);
    if (lua_toboolean(L, 9)) o.trace = std::make_shared<Trace>();
    o.precision = check_named(L, 10, parse_precision);
    o.loss_scale.mode = check_named(L, 11, parse_loss_scale_mode);
    o.loss_scale.initial = static_cast<float>(check_number(L, 12));
    o.loss_scale.window = check_int(L, 13);
    auto engine = [&] {  // the workers may run layers written in Lua meanwhile
        ScriptLock::Lend lend(script_lock(L));
        return std::make_shared<Engine>(std::move(o));
    }();
    push_box(L, kEngineType, std::move(engine));
    return 1;
}

// engine:step(images, labels) -> {loss, accuracy, samples, lr [, grad_norm] [, added_loss]
//                                  [, loss_scale, skipped]}
int engine_step(lua_State* L) {
    auto engine = check_engine(L, 1);
    const Tensor &images = check_tensor(L, 2), &labels = check_tensor(L, 3);
    const StepResult r = [&] {
        ScriptLock::Lend lend(script_lock(L));
        return engine->step(images, labels);
    }();
    lua_createtable(L, 0, 5);
    if (engine->options().optimizer.clip_norm > 0) {
        lua_pushnumber(L, r.grad_norm);
        lua_setfield(L, -2, "grad_norm");
    }
    lua_pushnumber(L, r.loss);
    lua_setfield(L, -2, "loss");
    if (r.added_loss != 0) {  // the net's nn.AddLoss terms, part of `loss`
        lua_pushnumber(L, r.added_loss);
        lua_setfield(L, -2, "added_loss");
    }
    if (engine->options().loss->has_accuracy()) {  // MSE has none
        lua_pushnumber(L, r.accuracy);
        lua_setfield(L, -2, "accuracy");
    }
    lua_pushnumber(L, static_cast<lua_Number>(r.samples));
    lua_setfield(L, -2, "samples");
    lua_pushnumber(L, r.lr);
    lua_setfield(L, -2, "lr");
    if (engine->loss_scaler().enabled()) {  // the step's scale, and whether it overflowed
        lua_pushnumber(L, r.loss_scale);
        lua_setfield(L, -2, "loss_scale");
        lua_pushboolean(L, r.skipped);
        lua_setfield(L, -2, "skipped");
    }
    return 1;
}

// engine:evaluate_batch(images, labels) -> {loss, correct, count}: sums over the batch.
int engine_evaluate_batch(lua_State* L) {
    auto engine = check_engine(L, 1);
    const Tensor &images = check_tensor(L, 2), &labels = check_tensor(L, 3);
    const LossSums s = [&] {
        ScriptLock::Lend lend(script_lock(L));
        return engine->evaluate_batch(images, labels);
    }();
    lua_createtable(L, 0, 3);
    lua_pushnumber(L, s.loss);
    lua_setfield(L, -2, "loss");
    if (engine->options().loss->has_accuracy()) {
        lua_pushnumber(L, static_cast<lua_Number>(s.correct));
        lua_setfield(L, -2, "correct");
    }
    lua_pushnumber(L, static_cast<lua_Number>(s.count));
    lua_setfield(L, -2, "count");
    return 1;
}

// engine:save(path [, metadata table of strings/numbers]); raises on failure (the previous
// file at `path` stays intact). Creates the directory.
int engine_save(lua_State* L) {
    auto engine = check_engine(L, 1);
    const std::string path = check_string(L, 2);
    std::map<std::string, std::string> meta;
    if (!lua_isnoneornil(L, 3)) {
        if (!lua_istable(L, 3)) throw ArgError(3, "metadata must be a table");
        lua_pushnil(L);
        while (lua_next(L, 3) != 0) {
            if (lua_type(L, -2) != LUA_TSTRING || !lua_isstring(L, -1))
                throw ArgError(3, "metadata must map names to strings or numbers");
            meta[lua_tostring(L, -2)] = lua_tostring(L, -1);
            lua_pop(L, 1);
        }
    }
    const auto dir = std::filesystem::path(path).parent_path();
    std::error_code error;
    if (!dir.empty()) std::filesystem::create_directories(dir, error);
    if (error)
        throw DataError("engine:save: cannot create the folder " + dir.string() + " for " + path +
                        ": " + error.message());
    engine->save(path, meta);
    return 0;
}

// engine:load(path) -> metadata table; nil, message when the file does not exist (a recipe
// may branch on that); raises when the file is there but unusable.
int engine_load(lua_State* L) {
    auto engine = check_engine(L, 1);
    const std::string path = check_string(L, 2);
    if (!std::filesystem::exists(path)) {
        lua_pushnil(L);
        lua_pushstring(L, ("no checkpoint at " + path).c_str());
        return 2;
    }
    const auto meta = engine->load(path);
    lua_createtable(L, 0, static_cast<int>(meta.size()));
    for (const auto& [key, value] : meta) {
        lua_pushstring(L, value.c_str());
        lua_setfield(L, -2, key.c_str());
    }
    return 1;
}

int engine_steps(lua_State* L) {
    lua_pushnumber(L, static_cast<lua_Number>(check_engine(L, 1)->steps()));
    return 1;
}

// engine:loss_scale() -> scale, steps skipped (loss scaling's state); nil without loss scaling.
int engine_loss_scale(lua_State* L) {
    const LossScaler& scaler = check_engine(L, 1)->loss_scaler();
    if (!scaler.enabled()) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushnumber(L, scaler.scale());
    lua_pushnumber(L, static_cast<lua_Number>(scaler.skipped()));
    return 2;
}

// engine:bytes_sent(): bytes this process's groups sent to the others since construction.
int engine_bytes_sent(lua_State* L) {
    lua_pushnumber(L, static_cast<lua_Number>(check_engine(L, 1)->bytes_sent()));
    return 1;
}

int engine_lr(lua_State* L) {
    lua_pushnumber(L, check_engine(L, 1)->current_lr());
    return 1;
}

// engine:stages() -> {{first =, last =, devices = {'cpu:0', ...}}, ...}: each stage's first and
// last layer (top-level names, or 'graph.node' under parallel.placement) and the device that runs
// it in each group.
int engine_stages(lua_State* L) {
    auto engine = check_engine(L, 1);
    if (!engine->prepared())
        TANDEM_THROW(ConfigError) << "engine:stages: the automatic split is not chosen yet; call "
                                     "engine:prepare(sample_shape, batch) or take a step first";
    const ParallelOptions& p = engine->options().parallel;
    lua_createtable(L, p.stages, 0);
    for (int s = 0; s < p.stages; ++s) {
        lua_createtable(L, 0, 3);
        const std::vector<std::string> layers = engine->stage_layer_names(s);
        lua_pushstring(L, layers.front().c_str());
        lua_setfield(L, -2, "first");
        lua_pushstring(L, layers.back().c_str());
        lua_setfield(L, -2, "last");
        lua_createtable(L, p.groups, 0);
        for (int g = 0; g < p.groups; ++g) {
            lua_pushstring(L, engine->stage_device(g, s).name().c_str());
            lua_rawseti(L, -2, g + 1);
        }
        lua_setfield(L, -2, "devices");
        lua_rawseti(L, -2, s + 1);
    }
    return 1;
}

// engine:prepare(sample_shape, batch) -> the automatic split's table ('' without one): places
// the stages (profiling first for split = 'auto'); step() does it on first use otherwise.
int engine_prepare(lua_State* L) {
    auto engine = check_engine(L, 1);
    const Shape sample = check_shape(L, 2);
    const std::int64_t batch = check_int(L, 3);
    if (batch < 1) throw ArgError(3, "batch must be at least 1");
    {
        ScriptLock::Lend lend(script_lock(L));
        engine->prepare(sample, batch);
    }
    lua_pushstring(L, engine->partition_text().c_str());
    return 1;
}

// engine:write_trace(path): the Chrome trace (JSON, for Perfetto or chrome://tracing) of every
// step so far; an engine made without trace = true has none to write.
int engine_write_trace(lua_State* L) {
    auto engine = check_engine(L, 1);
    const std::string path = check_string(L, 2);
    if (!engine->options().trace)
        TANDEM_THROW(ConfigError)
            << "engine:write_trace: this engine records no trace (make it with trace = true)";
    engine->options().trace->write(path);
    return 0;
}

int engine_net(lua_State* L) {
    auto engine = check_engine(L, 1);
    push_layer(L, engine->options().net);
    return 1;
}

int engine_device(lua_State* L) {
    auto engine = check_engine(L, 1);
    push_device(L, engine->options().devices.front());
    return 1;
}

// "Engine(19 layers on cpu:0, step 3)"; with several devices, all of them and the layout:
// "Engine(19 layers on 4 devices cpu:0..cpu:3, 2 groups x 2 stages x 4 micro-batches (1f1b), step
// 0)".
int engine_tostring(lua_State* L) {
    auto engine = check_engine(L, 1);
    const auto& o = engine->options();
    std::string where = engine->device().name();
    if (o.devices.size() > 1) {
        const auto& p = o.parallel;
        where = std::to_string(o.devices.size()) + " devices " + o.devices.front()->name() + ".." +
                o.devices.back()->name() + ", " + std::to_string(p.groups) + " group" +
                (p.groups == 1 ? "" : "s") + " x " + std::to_string(p.stages) + " stage" +
                (p.stages == 1 ? "" : "s") + " x " + std::to_string(p.micro_batches) +
                " micro-batch" + (p.micro_batches == 1 ? "" : "es") + " (" +
                std::string(pipeline_schedule_name(p.pipeline)) + ")";
    }
    lua_pushfstring(L, "Engine(%d layers on %s, step %d)", static_cast<int>(engine->net().size()),
                    where.c_str(), static_cast<int>(engine->steps()));
    return 1;
}

const luaL_Reg kEngineMethods[] = {
    {"step", wrap<engine_step>},
    {"evaluate_batch", wrap<engine_evaluate_batch>},
    {"save", wrap<engine_save>},
    {"load", wrap<engine_load>},
    {"steps", wrap<engine_steps>},
    {"loss_scale", wrap<engine_loss_scale>},
    {"lr", wrap<engine_lr>},
    {"bytes_sent", wrap<engine_bytes_sent>},
    {"net", wrap<engine_net>},
    {"device", wrap<engine_device>},
    {"stages", wrap<engine_stages>},
    {"write_trace", wrap<engine_write_trace>},
    {"prepare", wrap<engine_prepare>},
    {"free", wrap<release_box<EnginePtr, kEngineType>>},
    {nullptr, nullptr},
};

const luaL_Reg kOptimizerMethods[] = {{nullptr, nullptr}};

const luaL_Reg kScheduleMethods[] = {
    {"lr", wrap<schedule_lr>},
    {nullptr, nullptr},
};

const luaL_Reg kEngineFunctions[] = {
    {"engine_new", wrap<engine_new>},
    {"optim_sgd", wrap<optim_sgd>},
    {"optim_adam", wrap<optim_adam<false>>},
    {"optim_adamw", wrap<optim_adam<true>>},
    {"schedule_constant", wrap<schedule_constant>},
    {"schedule_step", wrap<schedule_step>},
    {"schedule_multistep", wrap<schedule_multistep>},
    {"schedule_cosine", wrap<schedule_cosine>},
    {"schedule_warmup", wrap<schedule_warmup>},
    {"schedule_hybrid", wrap<schedule_hybrid>},
    {nullptr, nullptr},
};

}  // namespace

void register_engine(lua_State* L, int module) {
    define_type(L, module,
                {kEngineType, wrap<release_box<EnginePtr, kEngineType>>, kEngineMethods,
                 wrap<engine_tostring>});
    define_type(L, module,
                {kOptimizerType, wrap<release_box<OptimizerOptions, kOptimizerType>>,
                 kOptimizerMethods, wrap<optimizer_tostring>});
    define_type(L, module,
                {kScheduleType, wrap<release_box<SchedulePtr, kScheduleType>>, kScheduleMethods,
                 wrap<schedule_tostring>});
    add_functions(L, module, kEngineFunctions);
}

}  // namespace tandem::lua
