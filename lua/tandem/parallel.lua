-- T.parallel: what every recipe needs to run on several devices from its command line.
--
--   local opt = T.options(..., T.parallel.defaults{epochs = 10, batch = 128, stages = 2})
--   local devices, parallel = T.parallel.layout(opt, net, sample_shape)  -- for T.Engine
--   T.parallel.describe(engine, opt, sample_shape)          -- after T.Engine: the partition
--   T.parallel.compare(opt, step_seconds)                   -- measured steps beside the plan's
--   local first, count = T.parallel.share(first, count)     -- under MPI: this rank's part
--
-- Under mpirun every rank runs the recipe with these options: --groups is per process (the
-- job trains ranks x groups replicas, T.Engine spreads them, see docs/mpi.md).
-- The options: --device (cpu or cuda: the kind of every device), --devices (0: groups x
-- stages; otherwise it must equal that), --threads (CPU) and --memory of each device,
-- --tf32 (GPUs: TF32 tensor cores, T.devices' option), --precision (T.Engine's: bf16 for
-- mixed precision on CPUs with AVX512_BF16 or AMX and on recent GPUs, fp16 on GPUs),
-- --loss_scale and --initial_loss_scale (T.Engine's: dynamic in fp16 by default), a flag for each option of T.Engine's
-- parallel table that recipes set (core.parallel_options(), the schema of
-- core/parallel/parallel_schema.h: --groups, --stages, --micro_batches, --pipeline, --split,
-- --placement (stages separated by '/', a stage's layers by ','), --recompute, --batch_norm,
-- --bucket_mb, --overlap, --deterministic, --average_every; see
-- docs/lua-api.md), --trace, and --plan: 'auto' asks the planner for the fastest layout on this
-- machine's CPU devices (it profiles the net, simulates every layout and prints the ranking); a
-- file written by `tandem plan --write` applies that plan; '' (the default) keeps the options
-- as given.
local core = require 'tandem.core'
-- The recipe's flags came from its command line: a wrong combination is a command-line mistake.
local usage_error = require('tandem.command_line').usage_error

local M = {}

-- The parallel options, as the core defines them: name, kind, default, flag, help, ...
local schema = core.parallel_options()

-- The options every recipe takes for its devices and their layout, declared as T.options
-- reads them (lua/tandem/command_line.lua): {default, help, kind =}.
local group = 'devices and parallelism'
-- The command-line flag of a T.Engine option ({default, help [, choices =]}, as T.options
-- reads it), from its row of the schema (core/engine/engine_schema.cpp): --precision here and
-- in `tandem bench`, --loss_scale and --initial_loss_scale.
-- A schema row's choices as T.options takes them: nil for an option that has none.
local function choices_of(row)
  return row.choices and #row.choices > 0 and row.choices or nil
end
function M.engine_flag(name)
  local row = require('tandem.options').schema_option('engine', name, 'T.Engine')
  return {row.default, row.help, choices = choices_of(row)}
end
local defaults = {
  device = {'cpu', 'the kind of every device', choices = {'cpu', 'cuda'}},
  devices = {0, 'devices (0: groups x stages)', kind = 'nonneg_int'},
  threads = {0, "kernel threads of each CPU device (0: the cores split between the devices)", kind = 'nonneg_int'},
  memory = {'', "memory cap of each device, such as 512MB ('': the machine's)", kind = 'size'},
  tf32 = {false, 'GPUs: TF32 tensor cores for convolutions and Linear'},
  precision = M.engine_flag('precision'),
  loss_scale = M.engine_flag('loss_scale'),
  initial_loss_scale = M.engine_flag('initial_loss_scale'),
  plan = {'', "'auto': the planner's choice for this machine; a file from `tandem plan --write`; '': as given"},
  plan_cache = {'reuse', "--plan=auto: reuse what an earlier run measured of this net on this machine and build "
                         .. '(refresh: profile afresh, and keep that; none: neither)',
                choices = require('tandem.plan').search_option('cache').choices},
  trace = {'', 'write a Chrome trace of every worker to this file'},
  schedule = {'', 'the old name of --pipeline, for one release'},
}

-- A placement as its recipe flag writes it: the stages separated by '/', each stage's layer
-- names by ',' ('embed,g.a1/g.b1/g.cat,head').
local function placement_text(stages)
  local texts = {}
  for _, names in ipairs(stages) do texts[#texts + 1] = table.concat(names, ',') end
  return table.concat(texts, '/')
end

-- --placement's text as T.Engine's parallel.placement (nil for ''); a usage error for a stage
-- or a name left empty.
local function read_placement(text)
  if text == '' then return nil end
  local stages = {}
  for stage in (text .. '/'):gmatch('([^/]*)/') do
    local names = {}
    for name in (stage .. ','):gmatch('([^,]*),') do
      if name == '' then
        usage_error(("--placement=%s: stage %d has an empty name (stages are separated by '/', a stage's "
                     .. "layers by ',': 'embed,g.a1/g.b1/g.cat,head')"):format(text, #stages + 1))
      end
      names[#names + 1] = name
    end
    stages[#stages + 1] = names
  end
  return stages
end

-- A parallel option's default as its recipe flag takes it: sizes in MB, a split as text (layer
-- names or indices, comma-separated, or 'auto'; '' for even layer counts), one recompute flag
-- for every stage, a placement as text ('' for none).
local function flag_value(option, value)
  if option.kind == 'bytes' then return value / 1048576 end
  if option.kind == 'cuts' then return type(value) == 'table' and table.concat(value, ',') or value end
  if option.kind == 'placement' then return placement_text(value) end
  if option.kind == 'stage_flags' then return type(value) == 'table' and #value > 0 and value[1] or value == true end
  return value
end

-- The recipe flag's kind for each kind of the schema.
local function flag_kind(option)
  if option.kind == 'count' then return option.minimum >= 1 and 'positive_int' or 'nonneg_int' end
  if option.kind == 'bytes' then return 'positive_number' end
  if option.kind == 'real' then return 'nonneg_number' end
  if option.kind == 'cuts' or option.kind == 'choice' or option.kind == 'placement' then return 'string' end
  return 'boolean'
end

for _, option in ipairs(schema) do
  if option.flag ~= '' then
    defaults[option.flag] = {flag_value(option, option.default), option.help, kind = flag_kind(option),
                             choices = choices_of(option)}
  end
end
for _, spec in pairs(defaults) do spec.group = group end

-- T.Engine's parallel table from the recipe's flags.
local function engine_parallel(opt)
  local parallel = {}
  for _, option in ipairs(schema) do
    if option.flag ~= '' then
      local value = opt[option.flag]
      if option.kind == 'bytes' then value = math.floor(value * 1048576) end
      if option.kind == 'cuts' and value == '' then value = nil end
      if option.kind == 'placement' then value = read_placement(value) end
      parallel[option.name] = value
    end
  end
  return parallel
end

-- The parallel options' declarations, with the recipe's own options over them. A recipe may
-- give a parallel option a default of its own (`stages = 2`): it keeps its help and kind.
function M.defaults(recipe)
  local own = {}
  for k, v in pairs(recipe) do
    if k == 'schedule' then k = 'pipeline' end  -- a recipe's defaults written before the rename
    own[k] = v
  end
  return require('tandem.command_line').override(defaults, own)
end

-- Checks the --device option (the kinds a recipe can put its devices on) and --tf32 with it.
function M.check_device(opt)
  if opt.device ~= 'cpu' and opt.device ~= 'cuda' then
    usage_error("option device must be 'cpu' or 'cuda', got '" .. tostring(opt.device) .. "'")
  end
  if opt.tf32 and opt.device ~= 'cuda' then
    usage_error('--tf32 is for --device=cuda (TF32 tensor cores are a GPU\'s)')
  end
end

-- The activation layout that trains fastest on devices of `kind`: channels_last on CPUs
-- (oneDNN's blocked kernels), contiguous (nchw) on GPUs, where cuDNN's float32 convolutions
-- are faster in nchw (an H100, batch 64: alexnet64 21.6k against 14.5k images/s, resnet20
-- 12.1k against 8.2k, smallbn 45.9k against 41.0k).
function M.preferred_layout(kind)
  if kind ~= 'cpu' and kind ~= 'cuda' then
    error(("T.parallel.preferred_layout: kind must be 'cpu' or 'cuda' (a device's kind()), got %s")
          :format(require('tandem.options').describe(kind)), 2)
  end
  return kind == 'cuda' and 'contiguous' or 'channels_last'
end

-- A recipe's --layout: as given, or for 'auto' the device kind's preferred one.
function M.data_layout(opt)
  if opt.layout ~= 'auto' and opt.layout ~= 'contiguous' and opt.layout ~= 'channels_last' then
    usage_error(("option --layout must be 'auto', 'contiguous' or 'channels_last', got '%s'"):format(tostring(opt.layout)))
  end
  if opt.layout ~= 'auto' then return opt.layout end
  return M.preferred_layout(opt.device or 'cpu')
end

-- opt's layout options from a plan (T.plan's result or a plan file): the options a plan
-- chooses (the schema's `planned` ones), and the threads and prediction it was made for.
local function apply_plan(opt, plan)
  for _, option in ipairs(schema) do
    if option.planned and option.flag ~= '' then
      local value = plan[option.name]
      if option.name == 'pipeline' and value == nil then value = plan.schedule end  -- written before the rename
      if option.kind == 'cuts' then value = value or {} end
      -- A plan of a chain (or a file that used the name for its device order) places nothing.
      if option.kind == 'placement' and type(value) ~= 'table' then value = {} end
      if option.kind == 'stage_flags' then value = value or false end
      if value ~= nil then opt[option.flag] = flag_value(option, value) end
    end
  end
  opt.devices = plan.groups * plan.stages
  opt.threads = plan.threads or opt.threads
  opt.predicted_step_ms = plan.predicted_step_ms or plan.step_ms
  opt.plan_label = plan.label or ('%dx%dx%d'):format(plan.groups, plan.stages, plan.micro_batches)
end

-- A plan file made for other devices: say what differs rather than run it (a plan for 8 GPUs
-- ran as 8 CPU devices on 2 cores and reported its prediction 100% off). Plans written before
-- files recorded their devices are taken as they are.
local function check_plan_devices(opt, plan, path)
  local replan = ('plan for this machine with `tandem plan RECIPE --batch=%d`%s'):format(
    opt.batch or plan.batch or 0, opt.device == 'cpu' and ' or run with --plan=auto' or '')
  if plan.device and plan.device ~= opt.device then
    usage_error(("plan %s was made for %d %s device(s) (topology '%s'); this run's are --device=%s: %s")
                :format(path, plan.groups * plan.stages, plan.model or plan.device, tostring(plan.topology),
                        opt.device, replan))
  end
  if plan.device == 'cpu' and (plan.cores or 0) > 0 and plan.cores ~= core.cores() then
    usage_error(("plan %s was made for a machine of %d cores (topology '%s'); this one has %d: %s")
                :format(path, plan.cores, tostring(plan.topology), core.cores(), replan))
  end
  if plan.batch and opt.batch and plan.batch ~= opt.batch then
    io.stderr:write(('warning: plan %s was made for a batch of %d; this run\'s is %d, so its prediction '
                     .. 'is for the other batch\n'):format(path, plan.batch, opt.batch))
  end
end

-- --plan=auto: every layout of this machine's cores as CPU devices, ranked by simulation.
local function plan_machine(opt, net, sample)
  local plan = require 'tandem.plan'
  local r = plan.search{net = net, sample = sample, batch = opt.batch, cost = 'measured',
                        topologies = plan.machine{memory = opt.memory ~= '' and opt.memory or nil},
                        layout = opt.layout, precision = opt.precision, top = 5, cache = opt.plan_cache}
  print(('planner: batch %d on this machine\'s %d cores, %d layouts simulated from measured profiles')
        :format(opt.batch, core.cores(), r.considered))
  local reused = r.calibration and plan.describe_reuse(r.calibration)
  if reused then print('planner: ' .. reused .. '; --plan_cache=refresh profiles afresh') end
  -- Where the figures are kept: T.parallel.compare drops them when the steps miss the plan.
  opt.plan_cache_file = r.calibration and r.calibration.cache_file
  io.write(r.table)
  local best = r.plans[1]
  if not best then error('the planner found no layout that fits the memory', 0) end
  print(('planner: chose %s on %d CPU device(s) of %d thread(s): %.2f ms a step predicted')
        :format(best.label, best.groups * best.stages, best.threads, best.step_ms))
  return best
end

-- The devices and the parallel table of T.Engine, from the options (and, with --plan, from the
-- planner's choice for `net` on samples of `sample_shape`).
function M.layout(opt, net, sample_shape)
  if M.planning then M.planning(net, sample_shape) end  -- `tandem plan RECIPE` stops here
  M.check_device(opt)
  if opt.schedule ~= nil and opt.schedule ~= '' then
    io.stderr:write('warning: --schedule is now --pipeline (the pipeline schedule; T.Engine\'s schedule is the '
                    .. 'learning rate\'s); the old name goes in the next release\n')
    opt.pipeline, opt.schedule = opt.schedule, ''
  end
  if opt.plan == 'auto' then
    if opt.device ~= 'cpu' then
      usage_error('--plan=auto plans CPU devices; on GPUs give --groups and --stages')
    end
    assert(net and sample_shape, 'T.parallel.layout(opt, net, sample_shape): --plan=auto needs the net')
    apply_plan(opt, plan_machine(opt, net, sample_shape))
  elseif opt.plan ~= '' then
    -- A plan file that is missing or holds a wrong value is a mistake on the command line
    -- (--plan=FILE), said in one line without a traceback.
    local ok, plan = pcall(require('tandem.plan').load, opt.plan)
    if not ok then
      usage_error(("--plan=%s: %s (--plan takes a file written by `tandem plan --write`, or 'auto')")
                  :format(opt.plan, (tostring(plan):gsub('^plan file [^:]*: ', ''))))
    end
    check_plan_devices(opt, plan, opt.plan)
    apply_plan(opt, plan)
    print(('plan %s: %s, %.2f ms a step predicted'):format(opt.plan, opt.plan_label, opt.predicted_step_ms or 0))
  end
  -- A placement's stages are its lists: --stages may say so, or stay 1.
  local placement = read_placement(opt.placement)
  if placement and opt.stages ~= #placement then
    if opt.stages ~= 1 then
      usage_error(('--placement lists %d stages, --stages is %d'):format(#placement, opt.stages))
    end
    opt.stages = #placement
  end
  local n = opt.devices > 0 and opt.devices or opt.groups * opt.stages
  if n ~= opt.groups * opt.stages then
    usage_error(('--devices=%d does not match --groups=%d x --stages=%d (one device per stage of every group)')
          :format(n, opt.groups, opt.stages))
  end
  -- T.devices' limits, said as the options they came from.
  if n > 256 then usage_error(('--groups=%d x --stages=%d make %d devices; at most 256'):format(opt.groups, opt.stages, n)) end
  if opt.threads > 1024 then
    usage_error(('option --threads must be 0 (the cores split between the devices) to 1024, got %d'):format(opt.threads))
  end
  local memory = opt.memory ~= '' and opt.memory or nil
  local devices = opt.device == 'cuda' and core.devices('cuda', n, {memory = memory, tf32 = opt.tf32})
                  or core.devices('cpu', n, {threads = opt.threads, memory = memory})
  return devices, engine_parallel(opt)
end

-- What an epoch line adds under loss scaling (T.Engine's loss_scale): ' | loss scale 32768,
-- 3 steps skipped'; '' without it.
function M.loss_scale_text(engine)
  local scale, skipped = engine:loss_scale()
  if not scale then return '' end
  return (' | loss scale %g, %d step%s skipped'):format(scale, skipped, skipped == 1 and '' or 's')
end

-- With a plan: the measured steps (a list of seconds, warm steps only) beside the predicted
-- step. The prediction is built from profiles' lower quartiles, so the measured lower quartile
-- is the figure compared; the mean and the machine's load say how far a busy machine moved it.
-- How far, and over how many steps, T.parallel.compare lets a plan miss before its kept figures
-- go: beyond the model's error where its figures hold (within 15% on the plans
-- bench/plan_validation.lua runs).
local replan_miss, replan_min_steps = 0.2, 20

function M.compare(opt, step_seconds)
  if not opt.predicted_step_ms or #step_seconds == 0 then return end
  local stats = require 'tandem.stats'
  local quartile = 1000 * stats.quantile(step_seconds, 0.25)
  local sum = 0
  for _, s in ipairs(step_seconds) do sum = sum + s end
  local load = stats.machine_load()
  local miss = opt.predicted_step_ms / quartile - 1
  print(('step time: measured %.2f ms (lower quartile of %d; mean %.2f), predicted %.2f ms (%+.0f%%) for plan %s%s')
        :format(quartile, #step_seconds, 1000 * sum / #step_seconds, opt.predicted_step_ms, 100 * miss, opt.plan_label,
                load and (', machine load %.1f on %d cores'):format(load, core.cores()) or ''))
  -- A plan whose steps miss its prediction by more than the model's usual error rests on figures
  -- that no longer describe this machine (taken during a busy spell): the kept ones are dropped,
  -- so the next --plan=auto measures afresh rather than choosing from them again. Only over
  -- enough steps for the quartile to mean something.
  if opt.plan_cache_file and #step_seconds >= replan_min_steps and math.abs(miss) > replan_miss then
    os.remove(opt.plan_cache_file)
    print(('planner: the steps missed the prediction by %+.0f%%: the figures kept in %s are dropped; the next '
           .. '--plan=auto measures afresh'):format(100 * miss, opt.plan_cache_file))
  end
end

-- This rank's part of a global batch (samples first .. first + count - 1, 1-based): the
-- ranks take consecutive slices in rank order, as the engine's groups do. Outside MPI: all.
function M.share(first, count)
  local check = require 'tandem.options'
  check.arg('T.parallel.share', 1, 'first', first, check.positive_int)
  check.arg('T.parallel.share', 2, 'count', count, check.nonneg_int)
  local rank, size = core.mpi.rank(), core.mpi.size()
  local from, to = math.floor(count * rank / size), math.floor(count * (rank + 1) / size)
  return first + from, to - from
end

local function count(n, one, many) return ('%d %s'):format(n, n == 1 and one or many) end

-- Prints the layout and, on several devices, where each stage runs (placing the stages, which
-- for split = 'auto' profiles the net first).
function M.describe(engine, opt, sample_shape)
  local ranks = core.mpi.size()
  if ranks > 1 then
    print(('MPI: %s x %s = %d replicas in all'):format(count(ranks, 'process', 'processes'),
          count(opt.groups, 'group', 'groups'), ranks * opt.groups))
  end
  if opt.groups * opt.stages == 1 then return end
  print(('%s: %s x %s x %s (%s), batch norm %s%s'):format(
    count(opt.groups * opt.stages, 'device', 'devices'), count(opt.groups, 'group', 'groups'),
    count(opt.stages, 'stage', 'stages'), count(opt.micro_batches, 'micro-batch', 'micro-batches'),
    opt.pipeline, opt.batch_norm, opt.deterministic and ', deterministic' or ''))
  local partition = engine:prepare(sample_shape, opt.batch)
  if partition ~= '' then print(partition) end
  for i, stage in ipairs(engine:stages()) do
    print(('  stage %d: %s .. %s on %s'):format(i, stage.first, stage.last,
                                                table.concat(stage.devices, ', ')))
  end
end

-- Writes the trace when --trace asked for one; under MPI, says what rank 0 sent.
function M.finish(engine, opt)
  if core.mpi.size() > 1 and engine:steps() > 0 then
    print(('MPI: rank 0 sent %.0f bytes per step (%d steps)'):format(engine:bytes_sent() / engine:steps(),
                                                                     engine:steps()))
  end
  if opt.trace ~= '' then
    engine:write_trace(opt.trace)
    print('trace: ' .. opt.trace .. ' (open it in Perfetto or chrome://tracing)')
  end
end

return M
