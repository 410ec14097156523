-- The one check of T.Engine's, T.data.Loader's, the data sources', T.devices', the planner's
-- (T.plan.costs, search, simulate, costs:layers), T.profile's, the optimizers', T.MetricsLog's,
-- T.tensor's and nn.Lua's options against their schemas (core/base/option_schema.h,
-- lua/option_table.h): each kind of mistake in each option set, as the user meets it, and every
-- option of every schema given a value of the wrong kind.
local T = require 'tandem'
local core = require 'tandem.core'
local t = require 'tandem.test'
local S = dofile('tests/lua/support.lua')
local nn = T.nn

local dir = S.tmpname('_schemas')
S.tandem({'gen-images', dir, '--classes=2', '--per-class=2', '--min-size=16', '--max-size=16', '--format=png'})
local source = assert(T.data.folder(dir))
local function net() return nn.Sequential{nn.Flatten(), nn.Linear(16, 2)} end
local sgd = T.optim.SGD{lr = 0.1}
local cpu = T.devices('cpu', 1, {threads = 1})

t.test('core.option_schema gives each schema, and refuses an unknown name', function()
  local rows, fn = core.option_schema('loader')
  t.eq(fn, 'T.data.Loader')
  t.eq(rows[1].name, 'source')
  t.eq(rows[1].required, true)
  t.eq(rows[2].name, 'batch')
  t.eq(rows[2].default, 32)
  t.eq(rows[2].low, 1)
  t.eq(rows[2].expected, 'an integer in [1, 16777216]')
  local _, engine_fn = core.option_schema('engine')
  t.eq(engine_fn, 'T.Engine')
  t.raises(function() core.option_schema('engines') end,
           "unknown option schema 'engines' (known: engine, loader, ")
end)

t.test('T.Engine: every kind of mistake, named, at the line calling it', function()
  local function engine(extra)
    local o = {net = net(), optim = sgd, devices = cpu}
    for k, v in pairs(extra) do o[k] = v end
    return T.Engine(o)
  end
  local here = 'test_option_schemas.lua:' .. (debug.getinfo(1, 'l').currentline + 1) .. ': '
  local message = t.raises(function() T.Engine{net = net(), optim = sgd, epochs = 3} end,
                           "T.Engine: unknown option 'epochs' (known: net, loss, devices, optim, schedule, seed, layout, precision, loss_scale, initial_loss_scale, loss_scale_window, parallel, trace)")
  t.ok(message:find(here, 1, true), 'not raised at the caller: ' .. message)
  t.raises(function() T.Engine{net = net()} end,
           "T.Engine: option 'optim' is required: an optimizer (T.optim.SGD{lr = 0.1}, T.optim.Adam{...})")
  t.raises(function() engine{seed = 'x'} end, "T.Engine: option 'seed' must be a non-negative integer, got 'x'")
  t.raises(function() engine{seed = -1} end, "T.Engine: option 'seed' must be a non-negative integer, got -1")
  t.raises(function() engine{seed = 2^60} end, "option 'seed' must be a non-negative integer, got 1.1529215046068e+18")
  t.raises(function() engine{trace = 1} end, "T.Engine: option 'trace' must be true or false, got 1")
  t.raises(function() engine{layout = 'NHWC'} end,
           "T.Engine: option 'layout' must be 'contiguous' or 'channels_last', got 'NHWC'")
  t.raises(function() engine{precision = 'fp8'} end,
           "T.Engine: option 'precision' must be 'fp32', 'bf16' or 'fp16', got 'fp8'")
  t.raises(function() engine{precision = 'fp16'} end,
           "precision = 'fp16' cannot run on cpu:0: the cpu backend trains in fp32 and bf16 only")
  t.raises(function() engine{loss_scale = 'static'} end,
           "T.Engine: option 'loss_scale' must be 'auto', 'none', 'fixed' or 'dynamic', got 'static'")
  t.raises(function() engine{initial_loss_scale = 0} end,
           "T.Engine: option 'initial_loss_scale' must be a finite number > 0")
  t.raises(function() engine{loss_scale_window = 0} end, "T.Engine: option 'loss_scale_window' must be")
  t.raises(function() engine{loss = sgd} end,
           "T.Engine: option 'loss' must be a loss (nn.CrossEntropy(), nn.MSE(), nn.BCEWithLogits()), got tandem.Optimizer")
  t.raises(function() engine{devices = cpu[1]} end,
           "T.Engine: option 'devices' must be a list of devices from T.devices, got tandem.Device")
  t.raises(function() engine{devices = {cpu[1], 'cpu:1'}} end, "got a list whose entry 2 is 'cpu:1'")
  t.raises(function() engine{parallel = 2} end,
           "T.Engine: option 'parallel' must be a table of parallel options ({groups = 2, stages = 2, ...}), got 2")
  t.raises(function() T.Engine(5) end, 'T.Engine: options table expected, got number')
  -- The defaults are the schema's: none of them written in engine.lua.
  local o = core.check_options('engine', {net = net(), optim = sgd})
  t.eq(o.seed, 1)
  t.eq(o.trace, false)
  t.eq(o.layout, nil)  -- worked out from the devices when used
  t.eq(tostring(engine{}):match('^Engine%(2 layers on cpu:0'), 'Engine(2 layers on cpu:0')
end)

t.test('T.data.Loader: every kind of mistake, named, nested options by their path', function()
  local function loader(extra)
    local o = {source = source, batch = 2}
    for k, v in pairs(extra) do o[k] = v end
    return T.data.Loader(o)
  end
  t.raises(function() loader{batches = 2} end, "T.data.Loader: unknown option 'batches' (known: source, batch, ")
  t.raises(function() T.data.Loader{batch = 2} end,
           "T.data.Loader: option 'source' is required: a data source (T.data.folder, T.data.lmdb, T.data.list)")
  t.raises(function() loader{source = sgd} end, "option 'source' must be a data source (T.data.folder, T.data.lmdb, T.data.list), got tandem.Optimizer")
  t.raises(function() loader{batch = 0} end, "T.data.Loader: option 'batch' must be an integer in [1, 16777216], got 0")
  t.raises(function() loader{threads = 0.5} end, "T.data.Loader: option 'threads' must be an integer in [1, 256], got 0.5")
  t.raises(function() loader{shuffle = 'yes'} end, "T.data.Loader: option 'shuffle' must be true or false, got 'yes'")
  t.raises(function() loader{last = 'partial'} end, "T.data.Loader: option 'last' must be 'drop', 'keep' or 'pad', got 'partial'")
  t.raises(function() loader{device = cpu} end, "T.data.Loader: option 'device' must be a device (from T.devices), got table")
  t.raises(function() loader{shard = true} end, "T.data.Loader: option 'shard' must be a table {index =, count =}, got boolean")
  t.raises(function() loader{shard = {idx = 1}} end, "T.data.Loader: unknown option 'shard.idx' (known: shard.index, shard.count)")
  t.raises(function() loader{shard = {index = 3, count = 2}} end, "T.data.Loader: option 'shard.index' must be an integer in [1, 2], got 3")
  t.raises(function() loader{shard = {index = 2}} end, "option 'shard.index' must be an integer in [1, 1], got 2")
  t.raises(function() loader{transforms = {crop = {8, 8, 8}}} end,
           "T.data.Loader: option 'transforms.crop' must be an integer in [1, 65536] or a pair {height, width} of them, got a list of 3 entries")
  t.raises(function() loader{transforms = {crop = {8, 0}}} end, "got a list whose entry 2 is 0")
  t.raises(function() loader{transforms = {std = {1, 1}}} end,
           "T.data.Loader: option 'transforms.std' must be a finite number or a list of 1 or 3 of them, got a list of 2 entries")
  t.raises(function() loader{transforms = {mean = {0.5, x = 1}}} end, 'got a table with keys other than 1 to 1')
  t.raises(function() loader{transforms = {fill = 256}} end, "T.data.Loader: option 'transforms.fill' must be an integer in [0, 255], got 256")
  local freed = assert(T.data.folder(dir))
  getmetatable(freed).__gc(freed)
  t.raises(function() loader{source = freed} end, "T.data.Loader: option 'source': data source was freed")
  -- What a range cannot say is still checked, after the schema: 2 channels, std 0.
  t.raises(function() loader{transforms = {channels = 2}} end, 'T.data.Loader: transform option channels must be 0, 1 or 3, got 2')
  t.raises(function() loader{transforms = {std = 0}} end, 'T.data.Loader: transform option std must be > 0, got 0')
  -- Defaults from the schema: batch 32, 2 threads, one shard.
  t.eq(tostring(T.data.Loader{source = source}):match(', batch %d+, %d+ threads%)$'), ', batch 32, 2 threads)')
  t.eq(loader{transforms = {crop = {8, 4}}}:batches_per_epoch(), 2)
end)

t.test('the data sources: every kind of mistake, named with the constructor, before the path', function()
  -- The options are checked before the path is looked at: a missing file does not hide them.
  local none = dir .. '/none'
  t.raises(function() T.data.lmdb(none, {clases = 3}) end, "T.data.lmdb: unknown option 'clases' (known: classes)")
  t.raises(function() T.data.lmdb(none, {classes = '3'}) end,
           "T.data.lmdb: option 'classes' must be a non-negative integer (0: the largest label + 1), got '3'")
  t.raises(function() T.data.lmdb(none, {classes = -1}) end, "option 'classes' must be a non-negative integer (0: the largest label + 1), got -1")
  t.raises(function() T.data.lmdb(none, {classes = 2^60}) end, 'got 1.1529215046068e+18')
  t.raises(function() T.data.lmdb(none, 3) end, "bad argument #2 to 'lmdb' (options table expected, got number)")
  t.raises(function() T.data.list(none, {root = dir, class = 2}) end, "T.data.list: unknown option 'class' (known: root, classes)")
  t.raises(function() T.data.list(none, {root = true}) end, "T.data.list: option 'root' must be a string, got boolean")
  t.raises(function() T.data.list(none, {classes = 1.5}) end, "T.data.list: option 'classes' must be a non-negative integer (0: the largest label + 1), got 1.5")
  t.raises(function() T.data.folder(dir, {classes = 2}) end, "T.data.folder: unknown option 'classes' (it takes no options)")
  t.raises(function() T.data.folder(dir, {[1] = 2}) end, "T.data.folder: unknown option '[1]' (it takes no options)")
  t.raises(function() T.data.mnist(none, none, {mean = 0, stdev = 1}) end, "T.data.mnist: unknown option 'stdev' (known: mean, std)")
  t.raises(function() T.data.mnist(none, none, {mean = '0.5'}) end, "T.data.mnist: option 'mean' must be a finite number, got '0.5'")
  t.raises(function() T.data.mnist(none, none, {mean = 1 / 0}) end, "T.data.mnist: option 'mean' must be a finite number, got inf")
  t.raises(function() T.data.mnist(none, none, {std = 0}) end, "T.data.mnist: option 'std' must be a finite number > 0, got 0")
  t.raises(function() T.data.mnist(none, none, {std = -1}) end, "T.data.mnist: option 'std' must be a finite number > 0, got -1")
  t.raises(function() T.data.mnist_split(none, 't10k', {std = 0}) end, "T.data.mnist: option 'std' must be a finite number > 0, got 0")
  for _, fn in ipairs{'interactions', 'interactions_info'} do
    local f, name = T.data[fn], 'T.data.' .. fn
    t.raises(function() f(none, {len = 2}) end, name .. ": unknown option 'len' (known: length, features)")
    t.raises(function() f(none, {length = 'all'}) end,
             name .. ": option 'length' must be an integer in [0, 16777216] (0: the longest sequence, or a database's own), got 'all'")
    t.raises(function() f(none, {length = -1}) end, name .. ": option 'length' must be an integer in [0, 16777216]")
    t.raises(function() f(none, {features = 2^24 + 1}) end,
             name .. ": option 'features' must be an integer in [0, 16777216] (0: the largest index + 1, or a database's own), got 16777217")
  end
  local ds = T.data.dataset(T.zeros{2, 1, 4, 4}, T.tensor({0, 1}, nil, {dtype = 'i32'}))
  t.raises(function() ds:batch({1}, 1, 1, {rotate = 1}) end, "dataset:batch: unknown option 'rotate' (known: flip, crop_pad, fill)")
  t.raises(function() ds:batch({1}, 1, 1, {flip = 'yes'}) end, "dataset:batch: option 'flip' must be true or false, got 'yes'")
  t.raises(function() ds:batch({1}, 1, 1, {crop_pad = -1}) end, "dataset:batch: option 'crop_pad' must be a non-negative integer, got -1")
  t.raises(function() ds:batch({1}, 1, 1, {crop_pad = 1.5}) end, "dataset:batch: option 'crop_pad' must be a non-negative integer, got 1.5")
  t.raises(function() ds:batch({1}, 1, 1, {fill = 0 / 0}) end, "dataset:batch: option 'fill' must be a finite number, got nan")
  -- What a range cannot say is still checked, after the schema: the padding against the images.
  t.raises(function() ds:batch({1}, 1, 1, {crop_pad = 4}) end, 'crop padding 4 must be in [0, 4)')
  -- The defaults are the schema's: classes from the labels, the list's root its folder.
  local list = dir .. '/files.txt'
  S.write(list, source:key(1):sub(#dir + 2) .. ' 0\n' .. source:key(4):sub(#dir + 2) .. ' 1\n')
  local listed = assert(T.data.list(list))
  t.eq({listed:size(), listed:classes()}, {2, 2})
  t.eq(assert(T.data.list(list, {classes = 5})):classes(), 5)
  t.eq(({ds:batch({1, 2}, 1, 2, {})})[1]:shape(), {2, 1, 4, 4})
end)

t.test('T.devices: every kind of mistake, for each kind of device', function()
  t.raises(function() T.devices('cpu', 1, {tf32 = true}) end, "T.devices: unknown option 'tf32' (known: memory, threads)")
  t.raises(function() T.devices('cpu', 1, {threads = -1}) end,
           "T.devices: option 'threads' must be an integer in [0, 1024] (0: every core), got -1")
  t.raises(function() T.devices('cpu', 1, {memory = 1.5}) end,
           "T.devices: option 'memory' must be a size such as '512MB' or a byte count, above 0 (leave it out for none), got 1.5")
  t.raises(function() T.devices('cpu', 1, {memory = true}) end, 'got boolean')
  t.raises(function() T.devices('cpu', 1, {memory = '5 furlongs'}) end, "T.devices: option 'memory': cannot read a size from '5 furlongs'")
  t.raises(function() T.devices('cpu', 1, 'fast') end, "bad argument #3 to 'devices' (options table expected, got string)")
  -- The CUDA options are checked before any GPU is looked for: a mistake is named on any machine.
  t.raises(function() T.devices('cuda', 1, {threads = 2}) end,
           "T.devices: unknown option 'threads' (known: memory, workspace, benchmark, tf32)")
  t.raises(function() T.devices('cuda', 1, {tf32 = 'on'}) end, "T.devices: option 'tf32' must be true or false, got 'on'")
  t.raises(function() T.devices('cuda', 1, {workspace = '0B'}) end, "T.devices: option 'workspace' must be a size such as '512MB'")
  local d = T.devices('cpu', 1, {memory = '1MB'})[1]
  t.eq(d:memory().cap, 1024 * 1024)
end)

t.test('T.plan.costs, search, simulate and costs:layers: every kind of mistake, named, at the caller', function()
  local F = 'test_option_schemas.lua:'
  local sample = {1, 4, 4}
  local cpu2 = T.plan.topology('cpu', {devices = 2, threads = 1})
  local costs = T.plan.costs{net = net(), sample = sample, iterations = 1, warmup = 0, rounds = 1}
  local function search(extra)
    local o = {costs = costs, batch = 4, topology = cpu2}
    for k, v in pairs(extra) do o[k] = v end
    return T.plan.search(o)
  end
  local function simulate(extra, plan)
    local o = {costs = costs, batch = 4, topology = cpu2, plan = plan or {}}
    for k, v in pairs(extra) do o[k] = v end
    return T.plan.simulate(o)
  end
  -- Unknown keys: each function its own (a search takes no plan, a simulation no top).
  t.raises(function() T.plan.costs{net = net(), sample = sample, iteration = 3} end,
           "T.plan.costs: unknown option 'iteration' (known: net, sample, placement, cost, precision, momentum, warmup, iterations, layout, seed, rounds, cache, topology)")
  t.raises(function() search{plan = {}} end, "T.plan.search: unknown option 'plan' (known: net, ")
  t.raises(function() simulate{top = 3} end, "T.plan.simulate: unknown option 'top' (known: net, ")
  t.raises(function() simulate({}, {group = 2}) end, "T.plan.simulate: unknown option 'plan.group' (known: plan.groups, plan.stages, ")
  t.raises(function() costs:layers{devices = 'H100'} end, "costs:layers: unknown option 'devices' (known: device, batch, threads)")
  -- Wrong types.
  t.raises(function() T.plan.costs{net = net(), sample = sample, momentum = 'yes'} end,
           "T.plan.costs: option 'momentum' must be true or false, got 'yes'")
  t.raises(function() T.plan.costs{net = 5, sample = sample} end, "T.plan.costs: option 'net' must be a net (nn.Sequential{...}), got 5")
  t.raises(function() T.plan.costs{sample = sample} end, "T.plan.costs: option 'net' is required: a net (nn.Sequential{...})")
  t.raises(function() search{micro_batches = 4} end,
           "T.plan.search: option 'micro_batches' must be a list of integers in [1, 1048576], got 4")
  t.raises(function() search{costs = 'x'} end, "T.plan.search: option 'costs' must be a cost model from T.plan.costs, got 'x'")
  t.raises(function() search{trace = true} end, "T.plan.search: option 'trace' must be a string, got boolean")
  t.raises(function() T.plan.search{net = net(), batch = 4, topology = cpu2} end,
           "T.plan.search: give the net and its sample's shape (net =, sample =), or a cost model from T.plan.costs (costs =)")
  t.raises(function() simulate({}, {split = {'fc1', {}}}) end,
           "T.plan.simulate: option 'plan.split' must be a list of layer names or 1-based layer numbers, got a list whose entry 2 is table")
  t.raises(function() simulate({}, {split = {1.5}}) end, 'got a list whose entry 1 is 1.5')
  t.raises(function() simulate{plans = {{}, 3}} end, "T.plan.simulate: option 'plans' must be a list of plan tables, got a list whose entry 2 is 3")
  t.raises(function() simulate{plans = {{}, {pipeline = 'zigzag'}}} end,
           "T.plan.simulate: option 'plans[2].pipeline' must be 'gpipe' or '1f1b', got 'zigzag'")
  t.raises(function() costs:layers{device = 7} end, "costs:layers: option 'device' must be a string, got 7")
  -- Out of range, each with the value given.
  t.raises(function() T.plan.costs{net = net(), sample = sample, rounds = 0} end,
           "T.plan.costs: option 'rounds' must be an integer in [1, 1048576], got 0")
  t.raises(function() T.plan.costs{net = net(), sample = sample, precision = 'fp8'} end,
           "T.plan.costs: option 'precision' must be 'fp32', 'tf32', 'fp16' or 'bf16', got 'fp8'")
  t.raises(function() search{batch = 2^41} end, "T.plan.search: option 'batch' must be a positive integer, got 2199023255552")
  t.raises(function() search{trace_plan = 0} end, "T.plan.search: option 'trace_plan' must be a positive integer, got 0")
  t.raises(function() search{micro_batches = {2, 2^21}} end, 'got a list whose entry 2 is 2097152')
  t.raises(function() search{devices = 257} end, "T.plan.search: option 'devices' must be an integer in [0, 256] (0: every count the topology allows), got 257")
  t.raises(function() simulate{bucket_bytes = 0} end, "T.plan.simulate: option 'bucket_bytes' must be a positive integer, got 0")
  t.raises(function() simulate({}, {groups = 0}) end, "T.plan.simulate: option 'plan.groups' must be an integer in [1, 256], got 0")
  t.raises(function() simulate({}, {devices = {0, -1}}) end,
           "T.plan.simulate: option 'plan.devices' must be a list of integers in [0, 1048576] (0-based), got a list whose entry 2 is -1")
  t.raises(function() costs:layers{batch = 0} end, "costs:layers: option 'batch' must be a positive integer, got 0")
  t.raises(function() costs:layers{threads = 0} end, "costs:layers: option 'threads' must be an integer in [1, 1024], got 0")
  -- Required, and raised at the line calling the function (not in plan.lua).
  local message = t.raises(function() T.plan.search{costs = costs, topology = cpu2} end,
                           "T.plan.search: option 'batch' is required: a positive integer")
  t.ok(message:find(F, 1, true), 'not raised at the caller: ' .. message)
  -- cost = 'auto': measured on a CPU topology or none, analytic on GPUs.
  t.eq(tostring(T.plan.costs{net = net(), sample = sample, iterations = 1, warmup = 0, rounds = 1}), 'PlanCosts(measured)')
  t.eq(tostring(T.plan.costs{net = net(), sample = sample, topology = T.plan.topology('dgx1')}), 'PlanCosts(analytic)')
  t.eq(T.plan.search{net = net(), sample = sample, batch = 4, topology = T.plan.topology('dgx1'), devices = 2}.cost, 'analytic')
  -- The defaults are the schema's: one device's plan of the whole batch, ranked with the others.
  local r = search{micro_batches = {2}}
  for _, p in ipairs(r.plans) do t.eq(p.micro_batches, 2) end
  t.eq(simulate({}, {groups = 2, devices = {1, 0}}).devices[1].name, 'cpu:1')
end)

t.test('T.profile, T.MetricsLog, T.tensor and nn.Lua: every kind of mistake, named', function()
  local d = cpu[1]
  t.raises(function() T.profile(net(), {1, 4, 4}, d, {iters = 1}) end,
           "T.profile: unknown option 'iters' (known: batch, warmup, iterations, layout, seed)")
  t.raises(function() T.profile(net(), {1, 4, 4}, d, {batch = '4'}) end,
           "T.profile: option 'batch' must be a positive integer, got '4'")
  t.raises(function() T.profile(net(), {1, 4, 4}, d, {batch = 0}) end,
           "T.profile: option 'batch' must be a positive integer, got 0")
  t.raises(function() T.profile(net(), {1, 4, 4}, d, {warmup = -1}) end,
           "T.profile: option 'warmup' must be an integer in [0, 1048576], got -1")
  t.raises(function() T.profile(net(), {1, 4, 4}, d, {iterations = 0}) end,
           "T.profile: option 'iterations' must be an integer in [1, 1048576], got 0")
  t.raises(function() T.profile(net(), {1, 4, 4}, d, {layout = 'nhwc'}) end,
           "T.profile: option 'layout' must be 'contiguous' or 'channels_last', got 'nhwc'")
  t.eq(T.profile(net(), {1, 4, 4}, d, {batch = 2, iterations = 1, warmup = 0}).batch, 2)
  local log = S.tmpname('.jsonl')
  t.raises(function() T.MetricsLog(log, {charts = false}) end, "T.MetricsLog: unknown option 'charts' (known: append, chart)")
  t.raises(function() T.MetricsLog(log, {append = 'no'}) end, "T.MetricsLog: option 'append' must be true or false, got 'no'")
  t.raises(function() T.tensor({1}, nil, {type = 'i32'}) end, "T.tensor: unknown option 'type' (known: dtype)")
  t.raises(function() T.tensor({1}, nil, {dtype = 32}) end, "T.tensor: option 'dtype' must be 'f32', 'i32' or 'u8', got 32")
  t.raises(function() T.tensor({1}, nil, {dtype = 'f64'}) end, "T.tensor: option 'dtype' must be 'f32', 'i32' or 'u8', got 'f64'")
  t.eq(T.tensor({1}):dtype(), 'f32')
  local id = function(_, x) return x end
  t.raises(function() nn.Lua{forward = id, backward = id, shape = id} end,
           "nn.Lua: unknown option 'shape' (known: forward, backward, parameters, output_shape, name)")
  t.raises(function() nn.Lua{forward = id} end, "nn.Lua: option 'backward' is required: a function")
  t.raises(function() nn.Lua{forward = id, backward = id, output_shape = {2}} end,
           "nn.Lua: option 'output_shape' must be a function, got table")
  t.raises(function() nn.Lua{forward = id, backward = id, parameters = T.ones{2}} end,
           "nn.Lua: option 'parameters' must be a table of name = f32 tensor, got tandem.Tensor")
end)

t.test('T.optim: every kind of mistake, named with the constructor, the value as given', function()
  t.raises(function() T.optim.SGD{lr = 0.1, decay = 0.1} end,
           "T.optim.SGD: unknown option 'decay' (known: lr, momentum, dampening, weight_decay, nesterov, clip_norm)")
  t.raises(function() T.optim.Adam{momentum = 0.9} end, "T.optim.Adam: unknown option 'momentum' (known: lr, betas, eps, weight_decay, clip_norm)")
  t.raises(function() T.optim.SGD{nesterov = 1} end, "T.optim.SGD: option 'nesterov' must be true or false, got 1")
  t.raises(function() T.optim.AdamW{betas = {0.9, '0.99'}} end,
           "T.optim.AdamW: option 'betas' must be a pair of finite numbers in [0, 1), got a list whose entry 2 is '0.99'")
  -- A value a float cannot hold is refused as written, not as the inf it would become.
  t.raises(function() T.optim.SGD{lr = 1e39} end, "T.optim.SGD: option 'lr' must be a finite number >= 0, got 1e+39")
  t.raises(function() T.optim.SGD{momentum = 1} end, "T.optim.SGD: option 'momentum' must be a finite number in [0, 1), got 1")
  t.raises(function() T.optim.Adam{betas = {0.9, 1}} end, 'got a list whose entry 2 is 1')
  t.raises(function() T.optim.AdamW{eps = 0} end, "T.optim.AdamW: option 'eps' must be a finite number > 0, got 0")
  -- What one option cannot say is the optimizer's own check, after the schema.
  t.raises(function() T.optim.SGD{nesterov = true} end, 'Nesterov momentum needs momentum > 0')
  -- The defaults are the schema's: AdamW decays its weights by 0.01, Adam not.
  t.ok(tostring(T.optim.AdamW{}):find('weight_decay 0.01', 1, true), tostring(T.optim.AdamW{}))
  t.ok(tostring(T.optim.Adam{}):find('weight_decay 0)', 1, true), tostring(T.optim.Adam{}))
  t.ok(tostring(T.optim.Adam{}):find('betas (0.9, 0.999)', 1, true), tostring(T.optim.Adam{}))
end)

-- Every option of every schema, given a value of a kind it never takes, is refused by name with
-- the schema's words: the loop leaves no option unchecked.
local wrong = {integer = 'x', number = 'x', flag = 1, choice = 1, text = 1, size = true,
               extent = 'x', numbers = 'x', integers = 'x', pair = 'x', object = 1, objects = 1, table = 1,
               ['function'] = 1}
local function shown(v)  -- as the messages show what was given
  if type(v) == 'string' then return "'" .. v .. "'" end
  if type(v) == 'number' then return tostring(v) end
  return type(v)
end
t.test('core.option_schemas names every schema', function()
  local names = core.option_schemas()
  for _, name in ipairs{'engine', 'loader', 'loader.shard', 'loader.transforms', 'data.folder', 'data.lmdb', 'data.list',
                        'data.mnist', 'data.interactions', 'data.interactions_info', 'dataset.batch', 'devices.cpu',
                        'devices.cuda', 'plan.costs', 'plan.search', 'plan.simulate', 'plan.simulate.plan',
                        'plan.costs.layers', 'profile', 'optim.sgd', 'optim.adam', 'optim.adamw', 'metrics_log',
                        'tensor', 'nn.lua'} do
    local found = false
    for _, n in ipairs(names) do found = found or n == name end
    t.ok(found, name .. ' is not in core.option_schemas()')
    t.ok(core.option_schema(name) ~= nil, name)
  end
end)

for _, name in ipairs(core.option_schemas()) do
  t.test(('every %s option refuses a value of the wrong kind'):format(name), function()
    local rows, fn = core.option_schema(name)
    local by_name = {}
    for _, o in ipairs(rows) do by_name[o.name] = o end
    for _, o in ipairs(rows) do
      local value = wrong[o.type]
      t.ok(value ~= nil, 'no wrong value for the type ' .. o.type)
      local given, expected = {[o.name] = value}, o.expected
      -- An option bounded by another (shard.index by count) is checked against that one's value.
      local bound = expected:match(' %(at most (%w+)%)$')
      if bound then
        given[bound] = by_name[bound].high
        expected = expected:gsub(' %(at most %w+%)$', '')
      end
      t.raises(function() core.check_options(name, given) end,
               ("%s: option '%s' must be %s, got %s"):format(fn, o.name, expected, shown(value)))
    end
  end)
end

S.cleanup()
