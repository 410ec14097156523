-- T.plan: how to lay a net out on devices, decided by simulation before anything runs
-- (core/plan, lua/bind_plan.cpp), and the `tandem plan` command.
--
--   local topo = T.plan.topology('server8_pcie')                -- recipes/topologies/*.lua
--   local r = T.plan.search{net = net, sample = {3, 224, 224}, batch = 256, topology = topo}
--   print(r.table)                                              -- ranked plans
--   local best = r.plans[1]                                     -- groups, stages, split, ...
--
-- cost = 'analytic' (default for GPU topologies) models devices from the hardware table;
-- cost = 'measured' (CPU topologies) profiles the net on this machine.
local core = require 'tandem.core'

local M = {}

local function topology_dir() return require('tandem.paths').recipes_dir() .. '/topologies' end

-- The names of the topologies in recipes/topologies.
function M.topologies()
  local names = {}
  local pipe = io.popen("ls '" .. topology_dir():gsub("'", "'\\''") .. "' 2>/dev/null")
  if pipe then
    for file in pipe:lines() do names[#names + 1] = file:match('^(.*)%.lua$') end
    pipe:close()
  end
  table.sort(names)
  return names
end

-- Why `name` names no topology (nil when it does): a name not in recipes/topologies (nor in
-- `also`, the caller's own names). A path (with a '/') is loadfile's to judge.
local function unknown_topology(name, also)
  if name:find('/') then return nil end
  local known = M.topologies()
  for _, k in ipairs(also or {}) do table.insert(known, 1, k) end
  for _, k in ipairs(known) do if k == name then return nil end end
  return ("unknown topology '%s' (known: %s; or a path to a .lua file)"):format(name, table.concat(known, ', '))
end

-- A topology: a name in recipes/topologies ('dgx1'), a path to a .lua file, or a table. Files
-- return a table or a function of options returning one. Checked: raises on bad input.
function M.topology(name, opt)
  local spec = name
  if type(name) == 'string' then
    local unknown = unknown_topology(name)
    if unknown then error(unknown, 2) end
    local path = name:find('/') and name or ('%s/%s.lua'):format(topology_dir(), name)
    local chunk, err = loadfile(path)
    if not chunk then
      if not io.open(path, 'r') then
        err = ('no such file (known topologies: %s; or a path to a .lua file)'):format(table.concat(M.topologies(), ', '))
      end
      error(("topology '%s': %s"):format(name, err), 2)
    end
    spec = chunk()
    if type(spec) == 'function' then spec = spec(opt or {}) end
  end
  if type(spec) ~= 'table' then error('a topology must be a table of nodes, got ' .. type(spec), 2) end
  -- A mistake in the table is the caller's: raised at their line, not this file's.
  local ok, description, count = pcall(core.plan_topology, spec)
  if not ok then error((tostring(description):gsub('^[^:]*%.lua:%d+: ', '')), 2) end
  spec.description, spec.device_count = description, count
  return spec
end

-- The ranges of the planner's counts, as T.devices takes them (lua/bind_device.cpp): at most
-- 256 devices of 1024 kernel threads each; a machine of more than 4096 cores is a typo.
local function int_in(low, high, what)
  return function(v)
    if type(v) == 'number' and v == math.floor(v) and v >= low and v <= high then return v end
    return nil, what
  end
end
M.device_count = int_in(1, 256, 'an integer in [1, 256]')
M.thread_count = int_in(0, 1024, 'an integer in [0, 1024] (0: the cores split between the devices)')
M.core_count = int_in(1, 4096, 'an integer in [1, 4096]')

-- This machine as CPU topologies: 1, 2, ... `cores` devices splitting the cores between them
-- (opt.devices: only that many).
function M.machine(opt)
  local check = require 'tandem.options'
  local function size(v)
    local ok, bytes = pcall(core.parse_bytes, type(v) == 'number' and tostring(v) or v)
    if (type(v) == 'string' or type(v) == 'number') and ok and bytes >= 1 then return v end
    return nil, "a size above 0 such as '512MB' or a byte count"
  end
  -- devices: one count (leave it out for every count that divides the cores); threads 0: the
  -- cores split evenly.
  opt = check.check('T.plan.machine', opt, {devices = M.device_count, threads = M.thread_count,
                                            cores = M.core_count, memory = size})
  local cores = opt.cores or core.cores()
  local list = {}
  for n = 1, cores do
    if (not opt.devices or opt.devices == n) and cores % n == 0 then
      list[#list + 1] = M.topology('cpu', {devices = n, threads = opt.threads ~= 0 and opt.threads or nil,
                                           cores = cores, memory = opt.memory})
    end
  end
  if #list == 0 then
    local counts = {}
    for n = 1, cores do if cores % n == 0 then counts[#counts + 1] = n end end
    error(('T.plan.machine: no CPU layout of %s devices on %d cores (the counts that divide the cores: %s)')
          :format(opt.devices, cores, table.concat(counts, ', ')), 2)
  end
  return list
end

-- The options of search, simulate and costs are checked by the binding against their schemas
-- (core/plan/plan_schema.h), so that a message names the function, the option and the value;
-- an error is raised at the line calling them.
-- Every layout ranked: {plans = {{groups, stages, micro_batches, pipeline (and its old name schedule), recompute, split,
-- placement (when a stage ends inside a graph or a block: each stage's names), device_order, step_ms, images_per_s, bubble, exposed_comm_ms, peak_bytes, lua}, ...}, table}.
M.search = core.plan_search

-- One plan's simulated step: args as for search, plus plan = {groups, stages, micro_batches,
-- pipeline, recompute, split} (or plans = {{...}, ...}).
M.simulate = core.plan_simulate

-- One all-reduce of `bytes` among the first `devices` devices of a topology (a name, a file or
-- a table), alone, as the simulator plays a bucket: its time in ms, and what ran. algorithm:
-- 'ring', 'tree' (NCCL's Simple protocol), 'auto' (NCCL's choice, returned as 'nvls/Simple',
-- 'ring/LL', ...) or 'server'.
function M.all_reduce(topology, bytes, devices, algorithm)
  if type(topology) ~= 'table' or not topology.nodes then topology = M.topology(topology) end
  return core.plan_all_reduce(topology, bytes, devices, algorithm)
end

-- A cost model to share between searches and simulations (their `costs =`): the net profiled
-- once, every plan weighed alike (its options: docs/lua-api.md, core/plan/plan_schema.h).
-- costs:layers{device =, batch =} lists what it says each layer, and each of its kernels, costs.
M.costs = core.plan_costs

-- What each field of a plan file may hold (what `tandem plan --write` writes); a field outside
-- these is refused, naming the file and the field, before anything runs on it (issue 19).
local function one_of(...)
  local choices = {...}
  return function(v)
    for _, c in ipairs(choices) do if v == c then return v end end
    return nil, "one of '" .. table.concat(choices, "', '") .. "'"
  end
end

local function string_or_nil(v)
  if type(v) == 'string' then return v end
  return nil, 'a string'
end

local function finite_positive(v)
  if type(v) == 'number' and v > 0 and v < math.huge then return v end
  return nil, 'a finite number > 0'
end

local function flags(v)
  if type(v) == 'boolean' then return v end
  if type(v) == 'table' then
    for _, f in ipairs(v) do if type(f) ~= 'boolean' then return nil, 'true, false or a list of them' end end
    return v
  end
  return nil, 'true, false or a list of them'
end

local function cuts(v)
  if v == 'auto' then return v end
  if type(v) == 'table' then
    for _, c in ipairs(v) do
      if type(c) ~= 'string' and not (type(c) == 'number' and c == math.floor(c) and c >= 1) then
        return nil, "a list of layer names or positive layer numbers, or 'auto'"
      end
    end
    return v
  end
  return nil, "a list of layer names or positive layer numbers, or 'auto'"
end

-- Each stage's layer names (what parallel.placement takes); a string is a file written before
-- the device order had its own field, read as that.
local function placement(v)
  if type(v) == 'string' then return v end
  if type(v) == 'table' then
    for _, stage in ipairs(v) do
      if type(stage) ~= 'table' or #stage == 0 then return nil, 'a list of stages, each a list of layer names' end
      for _, name in ipairs(stage) do
        if type(name) ~= 'string' then return nil, 'a list of stages, each a list of layer names' end
      end
    end
    return v
  end
  return nil, 'a list of stages, each a list of layer names'
end

local function indices(v)
  if type(v) == 'table' then
    for _, d in ipairs(v) do
      if type(d) ~= 'number' or d ~= math.floor(d) or d < 0 then return nil, 'a list of device numbers from 0' end
    end
    return v
  end
  return nil, 'a list of device numbers from 0'
end

local plan_fields = {
  groups = int_in(1, 256, 'an integer in [1, 256]'), stages = int_in(1, 256, 'an integer in [1, 256]'),
  micro_batches = int_in(1, 2^20, 'a positive integer'), pipeline = one_of('gpipe', '1f1b'),
  schedule = one_of('gpipe', '1f1b'), recompute = flags, split = cuts, placement = placement,
  device_order = one_of('packed', 'spread'),
  devices = indices, threads = M.thread_count, batch = int_in(1, 2^40, 'a positive integer'),
  topology = string_or_nil, device = one_of('cpu', 'cuda'), model = string_or_nil,
  cores = int_in(0, 2^20, 'a non-negative integer (0 for GPUs)'), predicted_step_ms = finite_positive,
  predicted_images_per_s = finite_positive, step_ms = finite_positive, label = string_or_nil,
}

-- A plan file written by `tandem plan --write`, checked field by field.
function M.load(path)
  local chunk, err = loadfile(path)
  if not chunk then
    if not io.open(path, 'r') then err = 'no such file' end
    error(('plan file %s: %s'):format(path, err), 2)
  end
  local ok, plan = pcall(chunk)
  if not ok then error(('plan file %s: %s'):format(path, tostring(plan)), 2) end
  if type(plan) ~= 'table' or not plan.groups or not plan.stages then
    error(('plan file %s must return a table with groups, stages, micro_batches, ...'):format(path), 2)
  end
  local describe = require('tandem.options').describe
  for key, value in pairs(plan) do
    local test = plan_fields[key]
    if not test then
      local known = {}
      for k in pairs(plan_fields) do known[#known + 1] = k end
      table.sort(known)
      error(("plan file %s: unknown field '%s' (known: %s)"):format(path, tostring(key), table.concat(known, ', ')), 2)
    end
    local good, expected = test(value)
    if good == nil then
      error(("plan file %s: field '%s' must be %s, got %s"):format(path, key, expected, describe(value)), 2)
    end
  end
  return plan
end

-- ---- `tandem plan RECIPE|NET.lua --batch=B [options]`: the options are declared above M.main.

-- Where a measured cost model's figures came from when an earlier run measured some of them
-- (nil otherwise): how many, when, and the file that keeps them.
function M.describe_reuse(c)
  if (c.reused or 0) == 0 then return nil end
  return ('%d of these figures from an earlier run of this net on this machine and build (measured %s, kept in %s)')
         :format(c.reused, c.cached_at, c.cache_file)
end

-- What a measured prediction rests on, in a few lines: the copy rate and hand-off latency,
-- the whole-step profiles, and how much busy cores slow each other down.
function M.describe_calibration(c)
  local lines = {('measured here: copies between devices at %.1f GB/s; a hand-off %.0f us (%.0f us '
                  .. 'with every core busy; a %.0f us wait for a core with twice as many workers as cores)')
                 :format(c.copy_gbs, 1000 * c.handoff_ms, 1000 * c.busy_handoff_ms, 1000 * c.crowded_handoff_ms)}
  if (c.cache_bytes or 0) > 0 then
    lines[#lines + 1] = ('  a last-level cache of %.0f MiB: activations of micro-batches in flight beyond it go '
                         .. 'out to memory'):format(c.cache_bytes / 2^20)
  end
  local reused = M.describe_reuse(c)
  if reused then lines[#lines + 1] = '  ' .. reused end
  local profiles = {}
  for _, p in ipairs(c.profiles) do
    profiles[#profiles + 1] = ('%d: %.2f ms'):format(p.batch, p.step_ms)
  end
  if #profiles > 0 then lines[#lines + 1] = '  one device\'s step by micro-batch: ' .. table.concat(profiles, ', ') end
  for _, k in ipairs(c.contention) do
    -- `over` is measured only once a plan has more busy devices than cores (0 before).
    local over = k.over > 0 and (', %d busy threads %.2fx'):format(2 * k.cores, k.over) or ''
    lines[#lines + 1] = ('  micro-batch %d: %d busy cores slow each other %.2fx%s'):format(k.batch, k.cores, k.all, over)
  end
  for _, u in ipairs(c.updates) do
    lines[#lines + 1] = ('  the optimizer\'s update on %d devices at once: %.2fx slower'):format(u.busy, u.slowdown)
  end
  for _, r in ipairs(c.all_reduce) do
    lines[#lines + 1] = ('  all-reduce (%s) among %d: %.3f ms + %.2f ms a MB'):format(r.algorithm, r.ranks, r.latency_ms,
                                                                                r.ms_per_mb)
  end
  return table.concat(lines, '\n')
end

local Done = {}  -- raised to stop a recipe once its net is planned

local function plan_net(net, sample, opt)
  local topologies
  if opt.topology == '' or opt.topology == 'machine' then
    topologies = M.machine{devices = opt.devices ~= 0 and opt.devices or nil, threads = opt.threads,
                           memory = opt.memory ~= '' and opt.memory or nil}
  else
    local options = {}  -- the topology file's options: those given (empty and 0 mean not given)
    for k, v in pairs(opt) do
      if v ~= '' and v ~= 0 then options[k] = v end
    end
    -- A missing file, or a value the topology refuses (--model=GTX9999), is the command
    -- line's mistake: one line naming the option, no traceback.
    local ok, topology = pcall(M.topology, opt.topology, options)
    if not ok then
      local message = tostring(topology):gsub('^[^:]*%.lua:%d+: ', '')
      local option = message:find('device model', 1, true) and opt.model ~= '' and '--model' or '--topology'
      require('tandem.command_line').usage_error(('tandem plan %s: %s'):format(option, message))
    end
    if opt.devices > topology.device_count then
      require('tandem.command_line').usage_error(('tandem plan: option --devices=%d: topology \'%s\' has %d devices')
                                                 :format(opt.devices, opt.topology, topology.device_count))
    end
    topologies = {topology}
    print(topologies[1].description)
  end
  local r = M.search{net = net, sample = sample, batch = opt.batch, topologies = topologies,
                     devices = opt.topology ~= 'machine' and opt.topology ~= '' and opt.devices or 0,
                     cost = opt.cost, top = opt.top, trace = opt.trace ~= '' and opt.trace or nil,
                     trace_plan = opt.trace_plan, simpler_within = opt.simpler_within,
                     iterations = opt.iterations, warmup = opt.warmup, cache = opt.cache,
                     algorithm = opt.algorithm,
                     overlap = opt.overlap, precision = opt.precision}
  print(('plans for a batch of %d (%s costs):'):format(opt.batch, r.cost))
  if r.calibration then print(M.describe_calibration(r.calibration)) end
  io.write(r.table)
  local best = r.plans[1]
  if not best then error('no plan fits the devices\' memory', 0) end
  local stages = {}
  for i, stage in ipairs(best.placement or {}) do stages[i] = table.concat(stage, ',') end
  local where = best.placement and 'placed ' .. table.concat(stages, ' / ')
                or 'split after ' .. (#best.split > 0 and table.concat(best.split, ', ') or '-')
  print(('best: %s (%s device order), %s: %.2f ms a step, %.0f images/s predicted')
        :format(best.label, best.device_order, where, best.step_ms, best.images_per_s))
  if opt.write ~= '' then
    if not best.lua then
      require('tandem.command_line').usage_error('tandem plan --write: --algorithm=server plans are a baseline '
                                                 .. 'to compare with; the engine does not run them')
    end
    local f = assert(io.open(opt.write, 'w'))
    f:write(best.lua)
    f:close()
    print('plan written to ' .. opt.write .. ' (tandem run RECIPE --plan=' .. opt.write .. ')')
  end
  if opt.trace ~= '' then print(('simulated trace of plan %d: %s'):format(opt.trace_plan, opt.trace)) end
  return r
end

-- The search schema's row of an option (core/plan/plan_schema.cpp): the command line takes its
-- default and choices from there, declared once (and recipes' --plan_cache, tandem.parallel).
function M.search_option(name)
  return require('tandem.options').schema_option('plan.search', name, 'T.plan.search')
end
local cost_option, algorithm_option = M.search_option('cost'), M.search_option('algorithm')
local precision_option = M.search_option('precision')
local simpler_option, cache_option = M.search_option('simpler_within'), M.search_option('cache')

local options = {
  batch = {0, 'the global batch to plan for (required)', kind = 'nonneg_int'},
  topology = {'machine', "a topology of recipes/topologies, a .lua file, or 'machine': this "
                         .. "machine's cores as CPU devices"},
  devices = {0, 'plan for this many devices only (0: every count the topology allows)', kind = 'nonneg_int'},
  cost = {cost_option.default, 'how layers are timed: profiled here, from the hardware table, or auto (profiled '
                  .. 'for CPU topologies)', choices = cost_option.choices},
  top = {10, 'plans listed', kind = 'positive_int'},
  simpler_within = {simpler_option.default, simpler_option.help, kind = 'fraction'},
  write = {'', 'write the best plan to this file (tandem run RECIPE --plan=FILE)'},
  trace = {'', "write the best plan's simulated step as a Chrome trace to this file"},
  trace_plan = {1, 'which ranked plan --trace writes (1: the best; its # in the table)', kind = 'positive_int'},
  classes = {0, "a net file's classes (0: its default)", kind = 'nonneg_int'},
  threads = {0, "kernel threads of each CPU device (0: the cores split between the devices)", kind = 'nonneg_int'},
  memory = {'', "memory cap of each device, such as 4GB ('': the topology's)", kind = 'size'},
  model = {'', "a topology file's model option (its GPU, say)"},
  nodes = {0, "a topology file's node count (0: its default)", kind = 'nonneg_int'},
  gpus = {0, "a topology file's GPUs a node (0: its default)", kind = 'nonneg_int'},
  iterations = {M.search_option('iterations').default, 'measured costs: timed steps of each profile', kind = 'positive_int'},
  warmup = {M.search_option('warmup').default, 'measured costs: untimed steps first', kind = 'nonneg_int'},
  -- On the command line the figures are kept and reused: a second plan of the same net takes a
  -- second, not a minute.
  cache = {'reuse', cache_option.help, choices = cache_option.choices},
  algorithm = {algorithm_option.default, "the gradient all-reduce's algorithm (auto: NCCL's own choice of algorithm and "
                      .. "protocol by size; server: a parameter server on one GPU, a baseline the engine "
                      .. "does not run)", choices = algorithm_option.choices},
  overlap = {true, 'all-reduce each bucket during the last backward (false: after it)'},
  precision = {precision_option.default, "what convolutions and products compute in (GPU models: tf32 is the CUDA "
                       .. "backend's tf32 option, fp16 and bf16 mixed precision, for comparison; measured CPU "
                       .. "costs: fp32 or bf16, T.Engine's precision)",
               choices = precision_option.choices},
}

local about = {
  usage = 'tandem plan RECIPE|NET.lua --batch=B [--option=value ...]',
  description = 'Ranks every layout of a net on a machine (groups x stages x micro-batches, the pipeline\n'
                .. 'schedule, the placement) by simulating a training step, before anything runs. RECIPE is a\n'
                .. 'recipe that calls T.parallel.layout; NET.lua a net file (recipes/nets/*.lua).',
  who = 'tandem plan', who_option = 'tandem plan: option', positional = {'RECIPE|NET.lua'},
  -- The names --topology and a topology file's --model take, listed with the help.
  notes = function()
    local devices, links = core.plan_models()
    local function wrapped(title, names)
      local lines, line = {}, title
      for i, name in ipairs(names) do
        local word = name .. (i < #names and ',' or '')
        if #line + #word + 1 > 100 then lines[#lines + 1], line = line, '   ' end
        line = line .. ' ' .. word
      end
      lines[#lines + 1] = line
      return table.concat(lines, '\n')
    end
    return table.concat({wrapped('topologies (--topology): machine,', M.topologies()),
                         wrapped('device models (a topology\'s devices, --model):', devices),
                         wrapped('link models (a topology\'s links):', links)}, '\n')
  end,
}

function M.main(args)
  local T = require 'tandem'
  local command_line = require 'tandem.command_line'
  local opt = T.options(args, options, about)
  local file = opt[1]
  if not file then command_line.usage_error('usage: ' .. about.usage .. ' (tandem plan --help lists the options)') end
  if opt.batch < 1 then command_line.usage_error('tandem plan: --batch=B is required (the global batch to plan for)') end
  local unknown = opt.topology ~= '' and unknown_topology(opt.topology, {'machine'})
  if unknown then command_line.usage_error('tandem plan --topology: ' .. unknown) end
  -- Ranges the declarations cannot say (T.devices' limits, this machine's cores), checked before
  -- anything is profiled (--threads=5000 made 5000 threads a device).
  if not M.thread_count(opt.threads) then
    command_line.usage_error(('tandem plan: option --threads must be 0 (the cores split between the devices) '
                              .. 'to 1024, got %s'):format(opt.threads))
  end
  if opt.devices > 256 then
    command_line.usage_error(('tandem plan: option --devices must be 0 (every count) to 256, got %d'):format(opt.devices))
  end
  if (opt.topology == '' or opt.topology == 'machine') and opt.devices > 0 and core.cores() % opt.devices ~= 0 then
    local counts = {}
    for n = 1, core.cores() do if core.cores() % n == 0 then counts[#counts + 1] = n end end
    command_line.usage_error(('tandem plan: option --devices=%d: this machine\'s %d cores split into %s devices'
                              .. ' (or give --topology)'):format(opt.devices, core.cores(), table.concat(counts, ', ')))
  end
  -- A recipe stops in T.parallel.layout, where its net is planned; a net file returns a builder.
  local parallel = require 'tandem.parallel'
  parallel.planning = function(net, sample)
    plan_net(net, sample, opt)
    error(Done, 0)
  end
  local chunk, err = loadfile(file)
  if not chunk then command_line.usage_error('tandem plan: ' .. err) end
  -- As `tandem run` sets them, for the recipe's T.recipe_dir and T.recipe_path.
  local host = package.loaded['tandem.host']
  T.recipe_dir = file:match('^(.*)/[^/]*$') or '.'
  if host then host.recipe, host.recipe_dir = file, T.recipe_dir end
  -- The recipe gets the batch alone: the other options are the planner's, not the recipe's.
  local ok, result = pcall(chunk, {batch = opt.batch})
  parallel.planning = nil
  if not ok then
    if result == Done then return end
    error(result, 0)
  end
  if type(result) ~= 'function' then
    error(file .. ': neither a net file (returning a builder) nor a recipe using T.parallel.layout', 0)
  end
  local net, sample = result{classes = opt.classes > 0 and opt.classes or nil}
  plan_net(net, sample, opt)
end

return M
