-- T.plan and `tandem plan`: topology files load (and bad ones are rejected clearly), the
-- planner ranks layouts on this machine's CPU devices and on the GPU topologies, a plan file
-- round-trips into a recipe's options.
local t = require 'tandem.test'
local T = require 'tandem'
local S = dofile('tests/lua/support.lua')
local nn = T.nn

local function small_net()
  return nn.Sequential{
    nn.Conv2d(1, 4, 3, {pad = 1}), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(4, 8, 3, {pad = 1}), nn.ReLU(),
    nn.Flatten(), nn.Linear(8 * 4 * 4, 16), nn.ReLU(), nn.Linear(16, 3),
  }, {1, 8, 8}
end

t.test('every topology file loads', function()
  for _, name in ipairs{'server8_pcie', 'dgx1', 'cluster'} do
    local topo = T.plan.topology(name)
    t.ok(topo.device_count >= 8, name .. ': ' .. topo.device_count .. ' devices')
    t.ok(topo.description:find('gpu'), topo.description)
  end
  local cpu = T.plan.topology('cpu', {devices = 4, threads = 1, cores = 2})
  t.eq(cpu.device_count, 4)
  t.eq(cpu.name, 'cpu4x1t')
  t.eq(#T.plan.machine{cores = 2}, 2)  -- 1 device of 2 threads, 2 devices of 1
end)

t.test('bad topologies are clear errors', function()
  local function with(change)
    local spec = dofile('recipes/topologies/server8_pcie.lua')()
    change(spec)
    return function() T.plan.topology(spec) end
  end
  t.raises(with(function(s) s.nodes[4].device = 'V200' end), {"unknown device model 'V200'", 'V100'})
  t.raises(with(function(s) s.nodes[4].parent = 'nowhere' end), "unknown parent 'nowhere'")
  t.raises(with(function(s) s.nodes[4].link = nil end), 'but no link')
  t.raises(with(function(s) s.nodes[2].parent = 'switch0' end), 'cycle')
  t.raises(with(function(s) s.nodes[4].parent = nil end), 'both have no parent')
  t.raises(with(function(s) s.peers = {{'gpu0', 'gpu42', link = 'nvlink2'}} end), "no device 'gpu42'")
  t.raises(function() T.plan.topology('no_such_topology') end, 'no_such_topology')
end)

-- Measured costs profile the net in the precision it will train in (fp32 or bf16), and the net
-- keeps it; GPU-only precisions are refused for them.
t.test('measured costs profile the net in its precision', function()
  local net, sample = small_net()
  t.eq(net:precision(), 'fp32')
  t.raises(function() T.plan.costs{net = net, sample = sample, precision = 'tf32'} end,
           "T.plan.costs: precision 'tf32' is for GPU models (cost = 'analytic'); measured CPU costs are fp32 or bf16")
  local ok, costs = pcall(T.plan.costs, {net = net, sample = sample, precision = 'bf16', iterations = 1,
                                         warmup = 0, rounds = 1})
  t.eq(net:precision(), 'bf16')
  if ok then
    local r = T.plan.search{costs = costs, batch = 16, topology = T.plan.topology('cpu', {devices = 1, threads = 1})}
    t.ok(#r.plans >= 1 and #costs:calibration().profiles >= 1, 'a plan from bf16 profiles')
  else  -- a CPU without bf16 kernels: refused by layer and device
    t.ok(tostring(costs):find('cannot compute in bf16', 1, true), tostring(costs))
  end
  T.plan.costs{net = net, sample = sample, iterations = 1, warmup = 0, rounds = 1}
  t.eq(net:precision(), 'fp32')
end)

t.test('one cost model shared by a search and a simulation gives the same prediction', function()
  local net, sample = small_net()
  local topology = T.plan.topology('cpu', {devices = 2, threads = 1, memory = '1GB'})
  local costs = T.plan.costs{net = net, sample = sample, iterations = 2, warmup = 1}
  t.ok(tostring(costs):find('measured'), tostring(costs))
  local r = T.plan.search{costs = costs, batch = 16, topology = topology}
  t.eq(r.cost, 'measured')
  for _, p in ipairs(r.plans) do
    local s = T.plan.simulate{costs = costs, batch = 16, topology = topology,
                              plan = {groups = p.groups, stages = p.stages, micro_batches = p.micro_batches,
                                      schedule = p.schedule, recompute = p.recompute, split = p.split,
                                      devices = p.device_indices}}
    t.eq(s.step_ms, p.step_ms, p.label)
  end
  t.ok(#costs:calibration().profiles >= 2)
  local analytic = T.plan.costs{net = net, sample = sample, cost = 'analytic'}
  t.eq(analytic:calibration(), nil)
  t.raises(function() T.plan.search{costs = 'x', batch = 16, topology = topology} end, 'costs')
  -- micro_batches = {0} divided by zero (SIGFPE) inside the search.
  for _, case in ipairs{{{0}, 'a list whose entry 1 is 0'}, {{2, -4}, 'a list whose entry 2 is -4'},
                        {{1.5}, 'a list whose entry 1 is 1.5'}, {{'2'}, "a list whose entry 1 is '2'"},
                        {{}, 'a list of 0 entries'}} do
    t.raises(function()
      T.plan.search{costs = costs, batch = 16, topology = topology, micro_batches = case[1]}
    end, "T.plan.search: option 'micro_batches' must be a list of integers in [1, 1048576], got " .. case[2])
  end
end)

t.test('the planner ranks CPU layouts from measured profiles', function()
  local net, sample = small_net()
  local r = T.plan.search{net = net, sample = sample, batch = 16, iterations = 2, warmup = 1,
                          topology = T.plan.topology('cpu', {devices = 2, threads = 1, memory = '1GB'}),
                          simpler_within = 0}  -- by prediction alone
  t.eq(r.cost, 'measured')
  t.ok(#r.plans >= 3, r.table)
  for i = 2, #r.plans do t.ok(r.plans[i - 1].images_per_s >= r.plans[i].images_per_s) end
  t.ok(r.table:find('2x1x1'), r.table)
  t.ok(#r.calibration.profiles >= 2, 'profiles taken: ' .. #r.calibration.profiles)
  local c = r.calibration
  t.ok(c.copy_gbs > 0 and #c.contention >= 1, T.plan.describe_calibration(c))
  -- The last-level cache, as sysfs lists it, and said beside the figures where it is known.
  t.ok(type(c.cache_bytes) == 'number' and c.cache_bytes >= 0, tostring(c.cache_bytes))
  t.eq(T.plan.describe_calibration(c):find('last-level cache of', 1, true) ~= nil, c.cache_bytes > 0)
  -- The 2x1x1 plans' all-reduce, measured on the in-process communicator.
  t.eq(#c.all_reduce, 1)
  t.eq(c.all_reduce[1].ranks, 2)
  t.ok(c.all_reduce[1].latency_ms >= 0 and c.all_reduce[1].ms_per_mb > 0, T.plan.describe_calibration(c))
  for _, p in ipairs(r.plans) do
    t.eq(p.groups * p.stages, 2)
    t.eq(#p.split, p.stages - 1)
    local d = p.device_indices
    t.eq(#d, 2)
    t.ok(d[1] ~= d[2] and math.min(d[1], d[2]) == 0 and math.max(d[1], d[2]) == 1, 'devices 0 and 1')
    t.eq(#p.devices, 2)  -- the simulation's per-device figures
    t.ok(p.devices[1].peak_bytes > 0 and p.devices[1].peak_bytes <= p.devices[1].cap)
  end
  -- Plans simulated together share one set of profiles; each gets its own result.
  local best = r.plans[1]
  local costs = T.plan.costs{net = net, sample = sample, iterations = 2, warmup = 1}
  local sims = T.plan.simulate{costs = costs, batch = 16,
                               topology = T.plan.topology('cpu', {devices = 2, threads = 1, memory = '1GB'}),
                               plans = {{groups = best.groups, stages = best.stages, micro_batches = best.micro_batches,
                                         schedule = best.schedule, split = best.split},
                                        {groups = 1, stages = 2, micro_batches = 4}}}
  t.eq(#sims, 2)
  t.ok(sims[1].step_ms > 0 and #sims[1].devices == 2)
  -- crowded_ms: how long more threads were busy than the cores; two one-thread devices on two
  -- cores never are, four data-parallel ones on two cores are through their forward and
  -- backward, which they run side by side and end together (the same profiles, and the
  -- contention of four busy threads).
  local crowded = T.plan.simulate{costs = costs, batch = 16,
                                  topology = T.plan.topology('cpu', {devices = 4, threads = 1, cores = 2,
                                                                     memory = '1GB'}),
                                  plans = {{groups = 2}, {groups = 4}}}
  t.eq(crowded[1].crowded_ms, 0)
  t.ok(crowded[2].crowded_ms >= crowded[2].compute_ms * (1 - 1e-9) and crowded[2].crowded_ms <= crowded[2].step_ms,
       ('%.3f ms crowded, backward done at %.3f, step %.3f ms'):format(crowded[2].crowded_ms,
                                                                       crowded[2].compute_ms, crowded[2].step_ms))
  t.eq(#sims[2].split, 1)  -- the partitioner's cut when none is given
  t.raises(function() T.plan.simulate{net = net, sample = sample, batch = 16, topology = T.plan.topology('cpu')} end,
           'needs plan')
end)

t.test('a plan file sets a recipe\'s layout', function()
  local net, sample = small_net()
  local r = T.plan.search{net = net, sample = sample, batch = 16, iterations = 2, warmup = 1,
                          topology = T.plan.topology('cpu', {devices = 2, threads = 1, memory = '1GB'})}
  local pipeline
  for _, p in ipairs(r.plans) do if p.stages == 2 then pipeline = p break end end
  local path = S.tmpname('.lua')
  S.write(path, pipeline.lua)
  local plan = T.plan.load(path)
  t.eq(plan.stages, 2)
  t.eq(plan.split[1], pipeline.split[1])
  local opt = T.options({plan = path}, T.parallel.defaults{batch = 16})
  local devices, parallel = T.parallel.layout(opt, net, sample)
  t.eq(#devices, 2)
  t.eq(parallel.stages, 2)
  t.eq(parallel.micro_batches, pipeline.micro_batches)
  t.eq(parallel.split, pipeline.split[1])
  S.cleanup()
end)

t.test('the planner may end a stage inside a residual block, and a plan file carries it', function()
  local net, sample = dofile('recipes/nets/resnet20.lua')()
  local topology = T.plan.topology('server8_pcie')
  -- Opening the blocks into units moves where a stage can end, not what the net costs: one
  -- stage costs the same weighed by top-level layer (a placement naming them whole) or by unit.
  local names = {}
  for i = 1, net:size() do names[i] = net:get(i):name() end
  local whole = T.plan.costs{net = net, sample = sample, cost = 'analytic', placement = {names}}
  local units = T.plan.costs{net = net, sample = sample, cost = 'analytic'}
  local one = {}
  for key, costs in pairs{whole = whole, units = units} do
    one[key] = T.plan.simulate{costs = costs, batch = 256, topology = topology, plan = {groups = 8}}
  end
  t.near(one.units.step_ms, one.whole.step_ms, 1e-9 * one.whole.step_ms, 'data parallel: the same step')
  local r = T.plan.search{costs = units, batch = 256, topology = topology, top = 100}
  local inside
  -- Two stages: the one cut can be checked against every cut between top-level layers.
  for _, p in ipairs(r.plans) do if p.placement and p.stages == 2 then inside = p break end end
  t.ok(inside, 'a two-stage layout whose best split ends a stage inside a block')
  t.eq(#inside.split, 0)
  local joined = {}
  for _, stage in ipairs(inside.placement) do joined[#joined + 1] = table.concat(stage, ',') end
  t.ok(table.concat(joined, '/'):find('block%d+%.body%.'), 'a block named by its layers: ' .. table.concat(joined, '/'))
  -- It beats every split between top-level layers of the same layout (two stages: one cut).
  t.eq(inside.stages, 2)
  local between = {}
  for i = 1, #names - 1 do
    between[i] = {groups = inside.groups, stages = 2, micro_batches = inside.micro_batches,
                  pipeline = inside.pipeline, devices = inside.device_indices, split = {names[i]}}
  end
  for _, sim in ipairs(T.plan.simulate{costs = units, batch = 256, topology = topology, plans = between}) do
    t.ok(inside.step_ms < sim.step_ms, ('%.3f ms inside a block, %.3f ms after %s'):format(inside.step_ms,
         sim.step_ms, sim.split[1]))
  end
  -- The plan runs on CPU devices as the file says, to one device's weights.
  local path = S.tmpname('.lua')
  S.write(path, (inside.lua:gsub("device = 'cuda'", "device = 'cpu'")))
  t.eq(T.plan.load(path).placement, inside.placement)
  S.cleanup()
  local function engine(parallel, devices)
    local n = dofile('recipes/nets/resnet20.lua')()
    return T.Engine{net = n, devices = T.devices('cpu', devices, {threads = 1}), seed = 3,
                    optim = T.optim.SGD{lr = 0.05, momentum = 0.9}, parallel = parallel}
  end
  local x, y = T.randn({8, 3, 32, 32}, 5), T.tensor({0, 1, 2, 3, 4, 5, 6, 7}, nil, {dtype = 'i32'})
  local function trained(e)
    for _ = 1, 2 do e:step(x, y) end
    return S.weights(e)
  end
  t.near(trained(engine({placement = inside.placement}, #inside.placement)), trained(engine({}, 1)), 1e-5,
         'the planned placement trains as one device')
end)

t.test('tandem plan on the 8-GPU server and on this machine', function()
  local out, rc = S.tandem{'plan', 'recipes/nets/resnet20.lua', '--topology=server8_pcie', '--batch=256'}
  t.eq(rc, 0, out)
  t.ok(out:find('plans for a batch of 256 %(analytic costs%)'), out)
  t.ok(out:find('8x1x1'), out)
  t.ok(out:find('1x8x'), 'the pure pipeline reference row: ' .. out)
  -- --trace-plan=N traces the N-th ranked plan rather than the best.
  local traces = {}
  for _, n in ipairs{1, 3} do
    traces[n] = S.tmpname('.json')
    out, rc = S.tandem{'plan', 'recipes/nets/resnet20.lua', '--topology=server8_pcie', '--batch=256',
                       '--trace=' .. traces[n], '--trace-plan=' .. n}
    t.eq(rc, 0, out)
    t.ok(out:find('simulated trace of plan ' .. n, 1, true), out)
  end
  t.ok(S.read(traces[3]):find('"traceEvents"') and S.read(traces[3]) ~= S.read(traces[1]), 'plan 3\'s own trace')
  out, rc = S.tandem{'plan', 'recipes/nets/resnet20.lua', '--topology=server8_pcie', '--batch=256',
                     '--trace=' .. traces[3], '--trace-plan=999'}
  t.ok(rc ~= 0 and out:find('trace_plan = 999, but %d+ plan%(s%) were ranked'), out)
  -- LeNet-5 on the 8-GPU server: a 4x2 pipeline predicted ahead of data parallel, by less than
  -- half: by prediction alone it ranks first; with --simpler-within=0.5 the simpler plan does,
  -- and the table says why.
  local function first_row(text) return text:match('\n%s+1%s+(%S+)') end
  out, rc = S.tandem{'plan', 'recipes/nets/lenet5.lua', '--topology=server8_pcie', '--batch=256',
                     '--simpler-within=0'}
  t.eq(rc, 0, out)
  t.eq(first_row(out), '4x2x1', out)
  t.ok(not out:find('is simpler than', 1, true), out)
  out, rc = S.tandem{'plan', 'recipes/nets/lenet5.lua', '--topology=server8_pcie', '--batch=256',
                     '--simpler-within=0.5'}
  t.eq(rc, 0, out)
  t.eq(first_row(out), '8x1x1', out)
  t.ok(out:find('#1 is simpler than #2 %(fewer stages%), which is predicted [%d.]+%% faster: less '
                .. 'than simpler_within = 50%%'), out)
  local path = S.tmpname('.lua')
  local trace = S.tmpname('.json')
  out, rc = S.tandem{'plan', 'recipes/fashion_mnist.lua', '--batch=16', '--devices=2',
                     '--write=' .. path, '--trace=' .. trace, '--iterations=2'}
  t.eq(rc, 0, out)
  t.ok(out:find('measured costs'), out)
  local written = T.plan.load(path)
  t.ok(written.groups >= 1)
  -- What it was made for, which `tandem run --plan=` checks (test_command_line.lua).
  t.eq({written.device, written.model, written.cores}, {'cpu', 'cpu', require('tandem.core').cores()})
  t.ok(S.read(trace):find('"traceEvents"'), 'a Chrome trace')
  out, rc = S.tandem{'plan', 'recipes/nets/resnet20.lua'}
  t.eq(rc, 2)
  t.ok(out:find('%-%-batch=B is required'), out)
  S.cleanup()
end)

-- The element-wise activations are costed as ReLU is (memory-bound), profiled and simulated.
t.test('tandem plan on a net of every element-wise activation', function()
  local path = S.tmpname('.lua')
  S.write(path, [[
local nn = require('tandem').nn
return function(opt)
  return nn.Sequential{
    nn.Conv2d(1, 8, 3, {pad = 1}), nn.GELU(), nn.Conv2d(8, 8, 3, {pad = 1}), nn.LeakyReLU(0.2),
    nn.Flatten(), nn.Linear(8 * 8 * 8, 32), nn.Tanh(), nn.Linear(32, 32), nn.Sigmoid(),
    nn.Linear(32, 32), nn.GELU{approximate = 'tanh'}, nn.Linear(32, (opt or {}).classes or 3),
  }, {1, 8, 8}
end
]])
  local out, rc = S.tandem{'plan', path, '--topology=server8_pcie', '--batch=64'}
  t.eq(rc, 0, out)
  t.ok(out:find('plans for a batch of 64 %(analytic costs%)'), out)
  out, rc = S.tandem{'plan', path, '--batch=16', '--devices=2', '--iterations=2'}
  t.eq(rc, 0, out)
  t.ok(out:find('measured costs'), out)
  S.cleanup()
end)

-- A second run of the same recipe plans from the figures the first measured: the same plan,
-- the same prediction, and says so.
t.test('the default recipe plans itself with --plan=auto, and a second run reuses the measurements', function()
  local dir = S.tmpname('_run')
  local args = {'run', 'recipes/fashion_mnist.lua', '--plan=auto', '--epochs=1', '--max_steps=4',
                '--batch=16', '--checkpoints=' .. dir .. '/ck', '--log=' .. dir .. '/log.jsonl'}
  local env = {TANDEM_CACHE_DIR = dir .. '/cache'}
  local out, rc = S.tandem(args, nil, env)
  t.eq(rc, 0, out)
  t.ok(out:find('planner: batch 16 on this machine'), out)
  t.ok(out:find('planner: chose %d+x%d+x%d+'), out)
  t.ok(out:find('step time: measured [%d.]+ ms %(lower quartile of %d+; mean [%d.]+%), predicted [%d.]+ ms'), out)
  t.ok(not out:find('from an earlier run', 1, true), out)
  local again = S.tandem(args, nil, env)
  t.ok(again:find('planner: %d+ of these figures from an earlier run of this net on this machine and build %(measured '
                  .. '[-%d:TZ]+, kept in ' .. dir:gsub('%p', '%%%0') .. '/cache/measurements%-%x+%.json%); '
                  .. '%-%-plan_cache=refresh profiles afresh'), again)
  t.eq(again:match('planner: chose [^\n]*'), out:match('planner: chose [^\n]*'))
  os.execute('rm -rf ' .. S.quote(dir))
  S.cleanup()
end)

t.test('a parameter server is a baseline to compare with: simulated on GPUs, never written or run', function()
  local net, sample = dofile('recipes/nets/lenet5.lua')()
  local gpus = T.plan.topology('server8_pcie')
  local costs = T.plan.costs{net = net, sample = sample, cost = 'analytic'}
  local plan = {groups = 8, devices = {0, 1, 2, 3, 4, 5, 6, 7}}
  local ring = T.plan.simulate{costs = costs, batch = 256, topology = gpus, plan = plan, overlap = false}
  local server = T.plan.simulate{costs = costs, batch = 256, topology = gpus, plan = plan, overlap = false,
                                 algorithm = 'server'}
  t.ok(server.step_ms > ring.step_ms, ('through GPU 0 %.3f ms, ring %.3f ms'):format(server.step_ms, ring.step_ms))
  local r = T.plan.search{costs = costs, batch = 256, topology = gpus, algorithm = 'server', top = 3}
  t.ok(r.plans[1].label:find('server'), r.plans[1].label)
  t.eq(r.plans[1].lua, nil, 'no plan file for a baseline')
  t.raises(function()
    T.plan.simulate{net = net, sample = sample, cost = 'measured', warmup = 0, iterations = 1, rounds = 1,
                    batch = 8, topology = T.plan.topology('cpu'), plan = {groups = 2}, algorithm = 'server'}
  end, {"'server'", 'GPU topologies'})
  t.raises(function() T.plan.search{costs = costs, batch = 256, topology = gpus, algorithm = 'ps'} end,
           "T.plan.search: option 'algorithm' must be 'ring', 'tree', 'auto' or 'server', got 'ps'")
  local out, rc = S.tandem{'plan', 'recipes/nets/lenet5.lua', '--topology=server8_pcie', '--batch=256',
                           '--algorithm=server', '--write=' .. S.tmpname('.lua')}
  t.eq(rc, 2, out)
  t.ok(out:find('baseline', 1, true) and not out:find('traceback', 1, true), out)
  S.cleanup()
end)

t.test("algorithm 'auto' is NCCL's own choice by size; a bad algorithm lists the choices", function()
  -- On a DGX H100 NCCL's model takes the LL protocol for a small message and NVLS (the switch
  -- reduces) for a large one; the reduction in the switch beats the ring.
  local ms, ran = T.plan.all_reduce('dgx_h100', 4096, 8, 'auto')
  t.eq(ran, 'ring/LL')
  local simple = T.plan.all_reduce('dgx_h100', 4096, 8, 'ring')
  t.ok(ms < simple, ('LL %.4f ms, Simple %.4f ms'):format(ms, simple))
  local big, chosen = T.plan.all_reduce('dgx_h100', 2 ^ 30, 8, 'auto')
  t.eq(chosen, 'nvls/Simple')
  t.ok(big < T.plan.all_reduce('dgx_h100', 2 ^ 30, 8, 'ring'), big)
  t.raises(function() T.plan.all_reduce('dgx_h100', 4096, 8, 'nccl') end,
           "unknown algorithm 'nccl'; known: ring, tree, auto, server")
  -- A fabric says whether its switch reduces; without it, no NVLS.
  local function pair(reduces)
    return {name = 'pair', nodes = {{name = 'host'}, {name = 'gpu0', parent = 'host', link = 'pcie5_x16', device = 'H100'},
                                    {name = 'gpu1', parent = 'host', link = 'pcie5_x16', device = 'H100'}},
            fabrics = {{name = 'nvswitch', link = 'nvlink4', count = 18, devices = {'gpu0', 'gpu1'}, reduces = reduces}}}
  end
  t.eq(select(2, T.plan.all_reduce(pair(true), 2 ^ 30, 2, 'auto')), 'nvls/Simple')
  t.ok(select(2, T.plan.all_reduce(pair(nil), 2 ^ 30, 2, 'auto')):find('^ring'))
  t.raises(function() T.plan.all_reduce(pair('yes'), 2 ^ 30, 2, 'auto') end,
           "fabric 'nvswitch': 'reduces' must be true or false, got string")
  local net, sample = dofile('recipes/nets/lenet5.lua')()
  local costs = T.plan.costs{net = net, sample = sample, cost = 'analytic'}
  local r = T.plan.search{costs = costs, batch = 256, topology = T.plan.topology('dgx_h100'), algorithm = 'auto',
                          top = 1}
  t.ok(r.plans[1].label:find('auto'), r.plans[1].label)
  t.ok(r.plans[1].lua, 'a plan file: the engine runs it, its NCCL choosing for itself')
  local out, rc = S.tandem{'plan', 'recipes/nets/lenet5.lua', '--topology=dgx_h100', '--batch=256',
                           '--algorithm=nccl'}
  t.eq(rc, 2, out)
  t.ok(out:find("'ring', 'tree', 'auto' or 'server'", 1, true) and not out:find('traceback', 1, true), out)
  S.cleanup()
end)

t.finish()
