-- The planner against the engine on this machine's CPU devices (issue 5's validation):
--   build/tandem run bench/plan_validation.lua [--net=smallbn] [--batch=64] [--iters=8]
--                                              [--warmup=2] [--plans=...] [--top5] [--json]
-- For each plan (2-4 one-thread CPU devices: pure data parallel, pure pipeline and hybrid,
-- both schedules), the simulator's step time from profiles measured here, and the engine's
-- step time measured right after on random data; then the error. With --top5, the
-- planner's top 5 for 4 devices are measured too: is its first choice the fastest measured?
-- Profiles and measurements alike take the lower quartile of their timed iterations: the
-- machine is shared, and other work only ever adds time (the median is printed beside).
local T = require 'tandem'

local opt = T.options(..., {
  net = 'smallbn', batch = 64, iters = 10, warmup = 2, profile_iters = 15, top5 = false, json = false,
  plans = '2x1x1,1x2x4:gpipe,1x2x4:1f1b,4x1x1,1x4x8:gpipe,1x4x8:1f1b,2x2x4:gpipe,2x2x4:1f1b',
})

local nets_dir = (T.recipe_dir or 'bench') .. '/../recipes/nets/'
local build = dofile(nets_dir .. opt.net .. '.lua')
local cores = T.cores()

local function random_batch(sample, n, classes)
  local count = n
  for _, d in ipairs(sample) do count = count * d end
  local values, labels = {}, {}
  for i = 1, count do values[i] = math.sin(i * 0.37) end
  for i = 1, n do labels[i] = (i * 7) % classes end
  local shape = {n}
  for _, d in ipairs(sample) do shape[#shape + 1] = d end
  return T.tensor(values, shape), T.tensor(labels, {n}, {dtype = 'i32'})
end

-- The q-quantile of a list, interpolated between neighbours (0.5: the median).
local function quantile(list, q)
  local v = {}
  for i, x in ipairs(list) do v[i] = x end
  table.sort(v)
  local at = 1 + q * (#v - 1)
  local below = math.floor(at)
  local above = math.min(below + 1, #v)
  return v[below] + (v[above] - v[below]) * (at - below)
end

-- An engine for a plan, on fresh one-thread devices, warmed up.
local function engine_for(p)
  local net, sample = build{classes = 10}
  local devices = T.devices('cpu', p.groups * p.stages, {threads = 1})
  local engine = T.Engine{net = net, devices = devices,
                          optim = T.optim.SGD{lr = 0.01, momentum = 0.9}, layout = 'channels_last',
                          parallel = {groups = p.groups, stages = p.stages, micro_batches = p.micro_batches,
                                      schedule = p.schedule, split = p.split, recompute = p.recompute}}
  local images, labels = random_batch(sample, opt.batch, 10)
  for _ = 1, opt.warmup do engine:step(images, labels) end
  return {engine = engine, images = images, labels = labels, times = {}}
end

-- The engines' step times (ms), lower quartile and median, the plans taking turns step by step so that whatever
-- else runs on the machine weighs on all alike.
local function measure_all(plans)
  local runs = {}
  for i, p in ipairs(plans) do runs[i] = engine_for(p) end
  for _ = 1, opt.iters do
    for _, run in ipairs(runs) do
      local t0 = T.now()
      run.engine:step(run.images, run.labels)
      run.times[#run.times + 1] = 1000 * (T.now() - t0)
    end
  end
  local quartile, median = {}, {}
  for i, run in ipairs(runs) do
    quartile[i], median[i] = quantile(run.times, 0.25), quantile(run.times, 0.5)
    run.engine:free()
  end
  return quartile, median
end

local function parse(item)
  local g, s, m, schedule = item:match('^(%d+)x(%d+)x(%d+):?(%w*)$')
  assert(g, 'a plan is GxSxM[:gpipe|1f1b], got ' .. item)
  return {groups = tonumber(g), stages = tonumber(s), micro_batches = tonumber(m),
          schedule = schedule ~= '' and schedule or 'gpipe'}
end

local rows = {}
local net, sample = build{classes = 10}
local function topology(n) return T.plan.topology('cpu', {devices = n, threads = 1, cores = cores}) end
-- Other work on the machine skews both the profiles and the measurements: say how much there was.
local function load_average()
  local f = io.open('/proc/loadavg')
  if not f then return '?' end
  local text = f:read('*l')
  f:close()
  return text:match('^(%S+)')
end
print(('%s, batch %d, one-thread CPU devices on %d cores; simulated from profiles measured here; load %s'):format(
  opt.net, opt.batch, cores, load_average()))

-- Simulates each plan, then measures them all; prints one row per plan.
local function compare(labels, plans, simulated)
  local measured, median = measure_all(plans)
  print(('%-16s %-22s %12s %12s %8s %12s'):format('plan', 'split', 'simulated', 'measured', 'error', '(median)'))
  local out = {}
  for i, p in ipairs(plans) do
    local row = {plan = labels[i], split = table.concat(p.split or {}, ','), simulated_ms = simulated[i],
                 measured_ms = measured[i], median_ms = median[i], error = simulated[i] / measured[i] - 1}
    rows[#rows + 1] = row
    out[i] = row
    print(('%-16s %-22s %9.2f ms %9.2f ms %+7.1f%% %9.2f ms'):format(row.plan, row.split, row.simulated_ms,
                                                                   row.measured_ms, 100 * row.error, row.median_ms))
  end
  return out
end

-- Every plan simulated with one set of profiles, so they compare on equal terms. A four-device
-- topology serves the plans of fewer devices too (the cores are shared alike).
local labels, plans, simulated = {}, {}, {}
for item in opt.plans:gmatch('[^,]+') do
  labels[#labels + 1], plans[#plans + 1] = item, parse(item)
end
-- One cost model for every simulation and the search: the same profiles weigh every plan.
local costs = T.plan.costs{net = net, sample = sample, iterations = opt.profile_iters}
local sims = T.plan.simulate{costs = costs, batch = opt.batch, topology = topology(4), plans = plans}
for i, sim in ipairs(sims) do plans[i].split, simulated[i] = sim.split, sim.step_ms end
compare(labels, plans, simulated)

if opt.top5 then
  local r = T.plan.search{costs = costs, batch = opt.batch, topology = topology(4), top = 5}
  print('the planner\'s top 5 for 4 devices, measured:')
  labels, plans, simulated = {}, {}, {}
  for i = 1, math.min(5, #r.plans) do
    labels[i], plans[i], simulated[i] = ('#%d %s'):format(i, r.plans[i].label), r.plans[i], r.plans[i].step_ms
  end
  local top = compare(labels, plans, simulated)
  local fastest = 1
  for i, row in ipairs(top) do if row.measured_ms < top[fastest].measured_ms then fastest = i end end
  print(('planner\'s choice: %.2f ms measured; the fastest of its top 5 measured: %s (%.2f ms)'):format(
    top[1].measured_ms, top[fastest].plan, top[fastest].measured_ms))
end

print(T.plan.describe_calibration(costs:calibration()))
local worst = 0
for _, r in ipairs(rows) do worst = math.max(worst, math.abs(r.error)) end
print(('largest error: %.1f%% over %d plans; load %s'):format(100 * worst, #rows, load_average()))
if opt.json then
  for _, r in ipairs(rows) do
    print(('{"plan": %q, "split": %q, "simulated_ms": %.3f, "measured_ms": %.3f, "error": %.4f}')
          :format(r.plan, r.split, r.simulated_ms, r.measured_ms, r.error))
  end
end
