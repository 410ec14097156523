-- Two devices of one kernel thread each against one device of two threads, on this machine's
-- cores, for the reference nets of recipes/nets/ (issue 4's "2 devices x 1 thread" benchmark):
--   build/tandem run bench/parallel.lua [--nets=lenet5,smallbn,resnet20,alexnet64] [--batch=64]
--                                       [--warmup=2] [--iters=5] [--micro_batches=4] [--json]
-- Per net, images/s (median step, the layouts taking turns) of a full training step (forward, loss, backward, all-reduce, SGD) on random
-- data, for
--   1x1     one device, --threads kernel threads (default 2: every core here), and one device
--           of one thread (what each of the two devices below is alone);
--   2x1     two groups (data parallel) on two devices of one thread each;
--   1x2xM   one group of two pipeline stages, M micro-batches, 1F1B, split = 'auto';
-- and each one's ratio to 1x1. Then the cost of batch norm's modes for the nets that have it
-- (--bn_nets): 2x2x4 GPipe on four 1-thread devices with batch_norm = micro, deferred and sync
-- (sync gathers statistics across micro-batches and groups before normalising, so it needs
-- GPipe: every micro-batch of a stage at once), images/s and the ratio to micro. The trace-based bubble and overlap figures are in tandem_bench_pipeline
-- (bench/pipeline.cpp).
local T = require 'tandem'

local opt = T.options(..., {
  nets = 'lenet5,smallbn,resnet20,alexnet64',
  batch = 64,
  warmup = 2,
  iters = 9,           -- timed steps of each layout, taken in turns
  threads = 2,          -- kernel threads of the single device
  micro_batches = 4,
  bn_nets = 'smallbn,resnet20',   -- '' skips the batch-norm modes
  json = false,
})

local nets_dir = (T.recipe_dir or 'bench') .. '/../recipes/nets/'

-- An engine for one layout, warmed up, and a function timing one step of it.
local function prepare(build, layout, sample)
  local engine = T.Engine{
    net = build{}, optim = T.optim.SGD{lr = 0.01, momentum = 0.9},
    devices = T.devices('cpu', layout.groups * layout.stages, {threads = layout.threads}),
    parallel = {groups = layout.groups, stages = layout.stages, micro_batches = layout.micro_batches,
                pipeline = layout.pipeline or '1f1b', split = layout.stages > 1 and 'auto' or nil,
                batch_norm = layout.batch_norm},
  }
  local images = T.randn({opt.batch, sample[1], sample[2], sample[3]}, 1)
  local labels = {}
  for i = 1, opt.batch do labels[i] = (i - 1) % 10 end
  labels = T.tensor(labels, nil, {dtype = 'i32'})
  engine:prepare(sample, opt.batch)
  for _ = 1, opt.warmup do engine:step(images, labels) end
  return engine, function()
    local t0 = T.now()
    engine:step(images, labels)
    return T.now() - t0
  end
end

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) / 2] or (t[n / 2] + t[n / 2 + 1]) / 2
end

local layouts = {
  {name = ('1x1, %d threads'):format(opt.threads), groups = 1, stages = 1, micro_batches = 1,
   threads = opt.threads},
  {name = '1x1, 1 thread', groups = 1, stages = 1, micro_batches = 1, threads = 1},
  {name = '2x1, 1 thread each', groups = 2, stages = 1, micro_batches = 1, threads = 1},
  {name = ('1x2x%d 1f1b, 1 thread each'):format(opt.micro_batches), groups = 1, stages = 2,
   micro_batches = opt.micro_batches, threads = 1},
}

local rows = {}
if not opt.json then
  print(('batch %d, median of %d steps per layout (taken in turns) after %d warm-up'):format(opt.batch, opt.iters, opt.warmup))
  print(('%-10s %-26s %10s %8s'):format('net', 'layout', 'images/s', 'ratio'))
end
-- Times `layouts` of one net in turns; a row per layout, its ratio against the first.
local function compare(name, layouts, part)
  local build = dofile(nets_dir .. name .. '.lua')
  local _, sample = build{}
  -- The machine is shared: its load moves within seconds. The layouts take turns, one step
  -- each, so a busy spell slows all of them alike; each reports its median step.
  local engines, timers, times = {}, {}, {}
  for i, layout in ipairs(layouts) do
    engines[i], timers[i] = prepare(build, layout, sample)
    times[i] = {}
  end
  for round = 1, opt.iters do
    for i = 1, #layouts do times[i][round] = timers[i]() end
  end
  local base
  for i, layout in ipairs(layouts) do
    engines[i]:free()
    local rate = opt.batch / median(times[i])
    base = base or rate
    rows[#rows + 1] = {part = part, net = name, layout = layout.name, images_per_s = rate,
                       ratio = rate / base}
    if not opt.json then
      print(('%-10s %-26s %10.1f %8.2f'):format(name, layout.name, rate, rate / base))
    end
  end
  collectgarbage()
end

for name in opt.nets:gmatch('[^,%s]+') do compare(name, layouts, 'threads') end

if opt.bn_nets ~= '' then
  local modes = {}
  for _, mode in ipairs{'micro', 'deferred', 'sync'} do
    modes[#modes + 1] = {name = ('2x2x%d gpipe, bn %s'):format(opt.micro_batches, mode), groups = 2,
                         stages = 2, micro_batches = opt.micro_batches, threads = 1, batch_norm = mode,
                         pipeline = 'gpipe'}
  end
  if not opt.json then print('\nbatch norm modes, 4 devices of 1 thread') end
  for name in opt.bn_nets:gmatch('[^,%s]+') do compare(name, modes, 'batch_norm') end
end
if opt.json then
  local parts = {}
  for _, r in ipairs(rows) do
    parts[#parts + 1] = ('{"part": %q, "net": %q, "layout": %q, "images_per_s": %.1f, "ratio": %.3f}')
                        :format(r.part, r.net, r.layout, r.images_per_s, r.ratio)
  end
  print('[' .. table.concat(parts, ', ') .. ']')
end
