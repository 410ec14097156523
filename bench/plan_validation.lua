-- The planner against the engine on this machine's CPU devices (issue 5's validation):
--   build/tandem run bench/plan_validation.lua [--net=smallbn] [--batch=64] [--iters=8]
--                                              [--warmup=2] [--plans=...] [--top5] [--json] [--runs=1]
-- For each plan (2-4 one-thread CPU devices: pure data parallel, pure pipeline and hybrid,
-- both schedules), the simulator's step time from profiles measured here, and the engine's
-- step time measured right after on random data; then the error. With --top5, the
-- planner's top 5 for 4 devices are measured too: is its first choice the fastest measured?
-- Profiles and measurements alike take the lower quartile of their timed iterations: the
-- machine is shared, and other work only ever adds time (the median is printed beside).
-- The top 5 take --top5_iters steps each, and every other plan's lower quartile is compared
-- with the choice's by a paired bootstrap (the plans take turns, so step k of each ran under
-- the same conditions): a plan is faster than the choice, measured, only when the 90% interval
-- of the ratio of their lower quartiles lies wholly below 1. A smaller gap is within what this
-- machine can measure.
-- With --runs=N the whole validation (fresh profiles, then the measured steps) runs N times and
-- each plan's errors are summed up: this machine's speed drifts between stretches of seconds, and
-- one run's error mixes the model's bias with where the profiles and the steps fell; over runs,
-- the median is the bias and the range the drift.
local T = require 'tandem'

local opt = T.options(..., {
  net = 'smallbn', batch = 64, iters = 10, top5_iters = 30, warmup = 2, profile_iters = 15, top5 = false,
  json = false, resamples = 2000, runs = 1,
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

local quantile = T.quantile

-- An engine for a plan, on fresh one-thread devices, warmed up.
local function engine_for(p)
  local net, sample = build{classes = 10}
  local devices = T.devices('cpu', p.groups * p.stages, {threads = 1})
  local engine = T.Engine{net = net, devices = devices,
                          optim = T.optim.SGD{lr = 0.01, momentum = 0.9}, layout = 'channels_last',
                          parallel = {groups = p.groups, stages = p.stages, micro_batches = p.micro_batches,
                                      pipeline = p.pipeline, split = p.split, recompute = p.recompute}}
  local images, labels = random_batch(sample, opt.batch, 10)
  for _ = 1, opt.warmup do engine:step(images, labels) end
  return {engine = engine, images = images, labels = labels, times = {}}
end

-- The engines' step times (ms), lower quartile and median, the plans taking turns step by step so that whatever
-- else runs on the machine weighs on all alike.
local function measure_all(plans, iters)
  local runs = {}
  for i, p in ipairs(plans) do runs[i] = engine_for(p) end
  for _ = 1, iters do
    for _, run in ipairs(runs) do
      local t0 = T.now()
      run.engine:step(run.images, run.labels)
      run.times[#run.times + 1] = 1000 * (T.now() - t0)
    end
  end
  local quartile, median, times = {}, {}, {}
  for i, run in ipairs(runs) do
    quartile[i], median[i], times[i] = quantile(run.times, 0.25), quantile(run.times, 0.5), run.times
    run.engine:free()
  end
  return quartile, median, times
end

-- The 90% interval of quartile(b) / quartile(a) over paired resamples of the steps.
local function ratio_interval(a, b)
  local ratios, n = {}, #a
  math.randomseed(12345)  -- the same resamples every run
  for r = 1, opt.resamples do
    local ra, rb = {}, {}
    for k = 1, n do
      local i = math.random(n)
      ra[k], rb[k] = a[i], b[i]
    end
    ratios[r] = quantile(rb, 0.25) / quantile(ra, 0.25)
  end
  return quantile(ratios, 0.05), quantile(ratios, 0.95)
end

local function parse(item)
  local g, s, m, pipeline = item:match('^(%d+)x(%d+)x(%d+):?(%w*)$')
  assert(g, 'a plan is GxSxM[:gpipe|1f1b], got ' .. item)
  return {groups = tonumber(g), stages = tonumber(s), micro_batches = tonumber(m),
          pipeline = pipeline ~= '' and pipeline or 'gpipe'}
end

local net, sample = build{classes = 10}
local function topology(n) return T.plan.topology('cpu', {devices = n, threads = 1, cores = cores}) end
-- Other work on the machine skews both the profiles and the measurements: say how much there was,
-- as the load and as the share of their ready time the training threads waited for a core.
local stats = require 'tandem.stats'
local function load_average() return tostring(stats.machine_load() or '?') end
local function lost_since(mark)
  local lost = stats.cpu_lost(stats.thread_times_since(mark))
  return lost and ('%.1f%%'):format(100 * lost) or '?'
end
print(('%s, batch %d, one-thread CPU devices on %d cores; simulated from profiles measured here; load %s'):format(
  opt.net, opt.batch, cores, load_average()))

-- Measures every plan and prints one row each, appended to `rows` too: its simulation
-- (`sims[i]`: step_ms, and crowded_ms, the part of the step in which its workers asked more cores
-- than there are) against the measured step.
local function compare(rows, labels, plans, sims, iters)
  local mark = stats.thread_mark()
  local measured, median, times = measure_all(plans, iters)
  -- Plans of more devices than cores wait for cores by design; a two-device plan's wait on two
  -- idle cores is near zero.
  print(('measured steps: the training threads waited for a core %s of their ready time'):format(lost_since(mark)))
  print(('%-16s %-22s %12s %12s %8s %12s %8s'):format('plan', 'split', 'simulated', 'measured', 'error', '(median)',
                                                    'crowded'))
  local out = {}
  for i, p in ipairs(plans) do
    local simulated = sims[i].step_ms
    local row = {plan = labels[i], split = table.concat(p.split or {}, ','), simulated_ms = simulated,
                 measured_ms = measured[i], median_ms = median[i], error = simulated / measured[i] - 1,
                 times = times[i], crowded = sims[i].crowded_ms / simulated, devices = p.groups * p.stages}
    rows[#rows + 1] = row
    out[i] = row
    print(('%-16s %-22s %9.2f ms %9.2f ms %+7.1f%% %9.2f ms %7.0f%%'):format(
      row.plan, row.split, row.simulated_ms, row.measured_ms, 100 * row.error, row.median_ms, 100 * row.crowded))
  end
  return out
end

-- With --top5: the planner's top 5 for 4 devices, measured, and whether any is measurably faster
-- than its choice.
local function measure_top5(rows, costs)
  local r = T.plan.search{costs = costs, batch = opt.batch, topology = topology(4), top = 5}
  print('the planner\'s top 5 for 4 devices, measured:')
  local labels, plans = {}, {}
  for i = 1, math.min(5, #r.plans) do labels[i], plans[i] = ('#%d %s'):format(i, r.plans[i].label), r.plans[i] end
  local top = compare(rows, labels, plans, plans, opt.top5_iters)
  local fastest, faster = 1, {}
  for i, row in ipairs(top) do
    if row.measured_ms < top[fastest].measured_ms then fastest = i end
    if i > 1 then
      local low, high = ratio_interval(top[1].times, row.times)
      print(('  %s against the choice: %+.1f%% (90%% interval %+.1f%% to %+.1f%%)'):format(
        row.plan, 100 * (row.measured_ms / top[1].measured_ms - 1), 100 * (low - 1), 100 * (high - 1)))
      if high < 1 then faster[#faster + 1] = row.plan end
    end
  end
  print(('planner\'s choice: %.2f ms measured; the fastest of its top 5 measured: %s (%.2f ms)'):format(
    top[1].measured_ms, top[fastest].plan, top[fastest].measured_ms))
  print(#faster == 0 and 'no plan of the top 5 is measurably faster than the choice'
        or ('measurably faster than the choice: %s'):format(table.concat(faster, ', ')))
end

-- The largest error over `rows`, and over those of no more devices than cores (whose workers
-- never wait for one another's core), with how many those are.
local function largest_errors(rows)
  local worst, worst_within, within = 0, 0, 0
  for _, r in ipairs(rows) do
    worst = math.max(worst, math.abs(r.error))
    if r.devices <= cores then
      worst_within, within = math.max(worst_within, math.abs(r.error)), within + 1
    end
  end
  return worst, worst_within, within
end

-- One validation: fresh profiles, every plan simulated from them, then measured. Returns the
-- rows of the plans asked for (the top 5's are printed, not returned) and the run's largest
-- error over all it measured.
local function validate()
  -- Every plan simulated with one set of profiles, so they compare on equal terms. A four-device
  -- topology serves the plans of fewer devices too (the cores are shared alike).
  local labels, plans = {}, {}
  for item in opt.plans:gmatch('[^,]+') do
    labels[#labels + 1], plans[#plans + 1] = item, parse(item)
  end
  -- One cost model for every simulation and the search: the same profiles weigh every plan.
  local profiles_mark = stats.thread_mark()
  local costs = T.plan.costs{net = net, sample = sample, iterations = opt.profile_iters}
  local sims = T.plan.simulate{costs = costs, batch = opt.batch, topology = topology(4), plans = plans}
  -- The simulation takes the profiles it needs, contention runs (busy devices side by side)
  -- included, whose own wait is small on an idle machine: a large figure here is other work, and
  -- the predictions inherit it.
  print(('profiles: the training threads waited for a core %s of their ready time'):format(lost_since(profiles_mark)))
  for i, sim in ipairs(sims) do plans[i].split = sim.split end
  local rows = {}
  compare(rows, labels, plans, sims, opt.iters)
  local all_rows = {}
  for i, r in ipairs(rows) do all_rows[i] = r end
  if opt.top5 then measure_top5(all_rows, costs) end

  print(T.plan.describe_calibration(costs:calibration()))
  local worst, worst_within, within = largest_errors(all_rows)
  print(('largest error: %.1f%% over %d plans (%.1f%% over the %d of no more devices than the %d cores); load %s'):format(
    100 * worst, #all_rows, 100 * worst_within, within, cores, load_average()))
  if opt.json then
    for _, r in ipairs(all_rows) do
      print(('{"plan": %q, "split": %q, "simulated_ms": %.3f, "measured_ms": %.3f, "error": %.4f, "crowded": %.3f}')
            :format(r.plan, r.split, r.simulated_ms, r.measured_ms, r.error, r.crowded))
    end
  end
  return rows, worst
end

-- Each plan's errors over the runs: the median (the model's bias on this machine), the range
-- (the drift between runs) and how many runs it was within 15% in.
local function summarise(runs)
  print(('over %d runs, each plan\'s error (simulated against measured):'):format(#runs))
  print(('%-16s %8s %20s %12s'):format('plan', 'median', 'range', 'within 15%'))
  for i, first in ipairs(runs[1].rows) do
    local errors, within = {}, 0
    for _, run in ipairs(runs) do
      local e = run.rows[i].error
      errors[#errors + 1] = e
      if math.abs(e) <= 0.15 then within = within + 1 end
    end
    table.sort(errors)
    print(('%-16s %+7.1f%% %+8.1f%% to %+6.1f%% %5d of %d'):format(first.plan, 100 * quantile(errors, 0.5),
      100 * errors[1], 100 * errors[#errors], within, #runs))
  end
  local worst, clean = {}, 0
  for _, run in ipairs(runs) do
    worst[#worst + 1] = ('%.1f'):format(100 * run.worst)
    if run.worst <= 0.15 then clean = clean + 1 end
  end
  print(('largest error of each run: %s%%; runs with every plan within 15%%: %d of %d'):format(
    table.concat(worst, ', '), clean, #runs))
end

local runs = {}
for r = 1, opt.runs do
  if opt.runs > 1 then print(('run %d of %d (%s)'):format(r, opt.runs, os.date('%H:%M:%S'))) end
  local rows, worst = validate()
  runs[r] = {rows = rows, worst = worst}
end
if opt.runs > 1 then summarise(runs) end
