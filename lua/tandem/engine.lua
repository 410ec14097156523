-- T.Engine, T.optim and T.schedule: the Lua side of lua/bind_engine.cpp.
--   local engine = T.Engine{net = net, loss = T.nn.CrossEntropy(), devices = T.devices('cpu', 1),
--                           optim = T.optim.SGD{lr = 0.1, momentum = 0.9},
--                           schedule = T.schedule.Cosine{lr = 0.1, total_steps = 1000},
--                           seed = 1, layout = 'channels_last',
--                           parallel = {groups = 2, stages = 2, micro_batches = 4, pipeline = '1f1b'}}
-- Options are checked against their schemas (unknown keys list the known ones) and reach C++ as
-- plain values.
local core = require 'tandem.core'
local check = require 'tandem.options'

local M = {optim = {}, schedule = {}}

-- Userdata and tables are checked by the C++ side, which names the argument.
local function any(v) return v end

-- `checked`: the options whose values are checked here (key -> checker); the others reach C++.
local function options(given, name, known, checked)
  local spec = {}
  for _, key in ipairs(known) do spec[key] = (checked or {})[key] or any end
  local checked = check.check(name, given, spec, 4)  -- raised at the line calling the constructor
  return checked
end

-- A checker for a bound object of metatable `type_name`, described as `what` ("a net (nn.Sequential
-- or a layer)"): the engine's options are named in its messages, not C++'s argument numbers.
local function object(type_name, what)
  return function(v)
    local mt = getmetatable(v)
    if type(mt) == 'table' and mt.__name == type_name then return v end
    return nil, what
  end
end

-- parallel.split may come from a command line as one string: 'conv2,fc1' or '4,8' (cut after
-- those layers); '' means no cuts given.
local function split_list(split)
  if type(split) ~= 'string' or split == 'auto' then return split end
  local cuts = {}
  for item in split:gmatch('[^,%s]+') do cuts[#cuts + 1] = tonumber(item) or item end
  if #cuts == 0 then return nil end
  return cuts
end

-- T.Engine's options are core/engine/engine_schema.h's, checked by the binding in one loop
-- (defaults filled in); a mistake is raised at the line calling T.Engine. (Called through
-- pcall, the binding's message carries no position of its own.)
local function engine_options(given)
  local ok, o = pcall(core.check_options, 'engine', given)
  if not ok then error(o, 3) end
  return o
end

function M.Engine(o)
  o = engine_options(o)
  -- The engine places a Sequential's entries; a graph (or any other single layer) given as the
  -- net trains as the one entry of a Sequential (its parameters read '<its name>.<node>...').
  local net = o.net
  if net:kind() ~= 'Sequential' then
    local ok, wrapped = pcall(require('tandem.nn').Sequential, {net})
    if not ok then error('T.Engine: ' .. tostring(wrapped), 2) end
    net = wrapped
  end
  local devices = o.devices or core.devices('cpu', 1)
  local parallel = o.parallel
  -- Under mpirun with several ranks the groups spread over the processes unless told not to.
  local mpi_default = core.mpi.size() > 1 and (type(parallel) ~= 'table' or parallel.mpi == nil)
  if type(parallel) == 'table' and parallel.split ~= nil or mpi_default then
    parallel = {}
    for k, v in pairs(o.parallel or {}) do parallel[k] = v end
    parallel.split = split_list(parallel.split)
    if mpi_default then parallel.mpi = true end
  end
  local layout = o.layout or (devices[1] and require('tandem.parallel').preferred_layout(devices[1]:kind()))
                 or 'channels_last'
  return core.engine_new(net, o.loss, devices, o.optim, o.schedule, o.seed, layout, parallel or {},
                         o.trace, o.precision, o.loss_scale, o.initial_loss_scale, o.loss_scale_window)
end

-- The optimizers' options are core/optim/optim_schema.h's, checked by the binding in one loop:
-- a mistake is named with the constructor and raised at the line calling it.
M.optim.SGD = core.optim_sgd
M.optim.Adam = core.optim_adam
M.optim.AdamW = core.optim_adamw

local function required(o, name, key)
  if o[key] == nil then error(('%s: option %s is required'):format(name, key), 3) end
  return o[key]
end

-- The schedules' options, checked here so that a message names the constructor and the option
-- ("T.schedule.Cosine: option 'total_steps' must be a positive integer, got 0"), never an
-- argument number of the C++ function behind it (issue 19).
-- The schedules keep their rates and factors as floats: a value a float cannot hold would reach
-- them as inf or 0 and be refused under another value than the one written (lr = 1e300 as
-- "got inf", gamma = 1e-50 as "got 0"), so the range is checked here, on the value as given.
-- A rate below a float's least (1e-50) is kept: it becomes 0, which it means.
local FLOAT_MAX, FLOAT_MIN = 3.4028234663852886e38, 1.1754943508222875e-38
local FLOAT = ' (it is kept as a float)'

local function rate(v)
  if not (check.finite_number(v) and v >= 0) then return nil, 'a finite number >= 0' end
  if v > FLOAT_MAX then return nil, 'at most 3.4e38' .. FLOAT end
  return v
end

local function positive(v)
  if not (check.finite_number(v) and v > 0) then return nil, 'a finite number > 0' end
  if v > FLOAT_MAX then return nil, 'at most 3.4e38' .. FLOAT end
  if v < FLOAT_MIN then return nil, 'at least 1.2e-38' .. FLOAT end
  return v
end

local function start_factor(v)
  if check.finite_number(v) and v >= 0 and v <= 1 then return v end
  return nil, 'a number in [0, 1]'
end

local function switch(v)
  if not (check.finite_number(v) and v > 0 and v <= 1) then return nil, 'a number in (0, 1]' end
  if v < FLOAT_MIN then return nil, 'at least 1.2e-38' .. FLOAT end
  return v
end

-- A list of step numbers; its entries are checked by MultiStep, which names the bad one.
local function milestones(v)
  if type(v) == 'table' and getmetatable(v) == nil then return v end
  return nil, 'a list of step numbers such as {30, 60}'
end

local schedule_checks = {lr = rate, min_lr = rate, gamma = positive, total_steps = check.positive_int,
                         step_size = check.positive_int, steps = check.nonneg_int,
                         start_factor = start_factor, switch = switch, milestones = milestones,
                         after = object('tandem.Schedule', 'a schedule (T.schedule.Cosine{...}, ...)')}

local function schedule_options(given, name, known)
  local spec = {}
  for _, key in ipairs(known) do spec[key] = schedule_checks[key] end
  local checked = check.check(name, given, spec, 4)  -- raised at the line calling the constructor
  return checked
end

function M.schedule.Constant(o)
  o = schedule_options(o, 'T.schedule.Constant', {'lr'})
  return core.schedule_constant(required(o, 'T.schedule.Constant', 'lr'))
end

function M.schedule.Step(o)
  o = schedule_options(o, 'T.schedule.Step', {'lr', 'step_size', 'gamma'})
  return core.schedule_step(required(o, 'T.schedule.Step', 'lr'),
                            required(o, 'T.schedule.Step', 'step_size'), o.gamma or 0.1)
end

function M.schedule.MultiStep(o)
  o = schedule_options(o, 'T.schedule.MultiStep', {'lr', 'milestones', 'gamma'})
  local list = required(o, 'T.schedule.MultiStep', 'milestones')
  for i, m in ipairs(list) do
    if not check.nonneg_int(m) then
      error(("T.schedule.MultiStep: option 'milestones' must hold whole step numbers >= 0; entry %d is %s")
            :format(i, check.describe(m)), 2)
    end
    if i > 1 and m <= list[i - 1] then
      error(("T.schedule.MultiStep: option 'milestones' must be strictly increasing, got %s then %s")
            :format(list[i - 1], m), 2)
    end
  end
  return core.schedule_multistep(required(o, 'T.schedule.MultiStep', 'lr'), list, o.gamma or 0.1)
end

function M.schedule.Cosine(o)
  o = schedule_options(o, 'T.schedule.Cosine', {'lr', 'total_steps', 'min_lr'})
  return core.schedule_cosine(required(o, 'T.schedule.Cosine', 'lr'),
                              required(o, 'T.schedule.Cosine', 'total_steps'), o.min_lr or 0)
end

function M.schedule.Warmup(o)
  o = schedule_options(o, 'T.schedule.Warmup', {'after', 'steps', 'start_factor'})
  return core.schedule_warmup(required(o, 'T.schedule.Warmup', 'after'),
                              required(o, 'T.schedule.Warmup', 'steps'), o.start_factor or 0)
end

function M.schedule.Hybrid(o)
  o = schedule_options(o, 'T.schedule.Hybrid', {'lr', 'total_steps', 'switch', 'min_lr'})
  return core.schedule_hybrid(required(o, 'T.schedule.Hybrid', 'lr'),
                              required(o, 'T.schedule.Hybrid', 'total_steps'), o.switch or 0.5,
                              o.min_lr or 0)
end

-- engine:evaluate(dataset [, {batch = 1000}]) -> {loss =, accuracy =, samples =}: the mean loss
-- and accuracy over the whole data set, in evaluation mode (batch norm's running statistics,
-- no dropout).
local function type_name(v)
  local mt = getmetatable(v)
  return type(mt) == 'table' and mt.__name or nil
end

-- engine:evaluate(data [, {batch =}]): the mean loss and accuracy over a data set (every sample,
-- in order, `batch` at a time) or over one epoch of a T.data.Loader (what it yields: its batch,
-- order and `last` rule).
local function evaluate(engine, data, o)
  local kind = type_name(data)
  if kind ~= 'tandem.Dataset' and kind ~= 'tandem.Loader' then
    error(("bad argument #1 to 'evaluate' (a data set (T.data.mnist, T.data.dataset) or a "
           .. 'T.data.Loader expected, got %s)'):format(kind or check.describe(data)), 2)
  end
  local loss, correct, count = 0, nil, 0  -- correct stays nil for a loss without accuracy
  local function add(images, labels)
    local s = engine:evaluate_batch(images, labels)
    loss, count = loss + s.loss, count + s.count
    if s.correct then correct = (correct or 0) + s.correct end
  end
  if kind == 'tandem.Loader' then
    if o ~= nil then error("evaluate: a T.data.Loader brings its own batch; give no options", 2) end
    for images, labels in data:batches(1) do add(images, labels) end
  else
    o = options(o, 'evaluate', {'batch'}, {batch = check.positive_int})
    local batch = o.batch or 1000
    local n = data:size()
    local order = core.data.epoch_order(n, 0, 0, false)
    for first = 1, n, batch do add(data:batch(order, first, math.min(batch, n - first + 1))) end
  end
  if count == 0 then error('evaluate: the data gave no samples', 2) end
  return {loss = loss / count, accuracy = correct and correct / count, samples = count}
end

function M.install(metatables)
  metatables.Engine.__index.evaluate = evaluate
end

return M
