-- The third seed's compound model (recipes/nets/compound.lua: LSTM, autoencoder, attention and
-- head) trained with layer-division model parallelism, against one device, in the same run:
--   build/tandem run bench/compound.lua [--batch=128] [--warmup=2] [--iters=9] [--micro_batches=1]
--                                        [--topologies=dgx1,server8_pcie]
-- Measured here, images/s (median step, the layouts taking turns) of a full training step on
-- random data for
--   1 device    one CPU device of one kernel thread, and one of every core;
--   placed      three devices of one thread, each sub-model on its own (the net's placement),
--               the LSTM and the autoencoder computing at the same time;
--   auto        three devices of one thread cut by split = 'auto' (the graph's nodes profiled
--               and cut; its stages printed);
-- and each one's ratio to one device of one thread. Then the same placement simulated on GPU
-- machines (the planner's analytic costs: T.plan.simulate) against one GPU of that machine
-- (the seed reports 2.6x on four GPUs for its model).
local T = require 'tandem'

local opt = T.options(..., {
  batch = 128,
  warmup = 2,
  iters = 9,          -- timed steps of each layout, taken in turns
  micro_batches = 1,  -- of the placed layout (a pipeline over its stages when above 1)
  topologies = 'dgx1,server8_pcie',
})

local compound = dofile((T.recipe_dir or 'bench') .. '/../recipes/nets/compound.lua')
local cores = require('tandem.core').cores()

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) / 2] or (t[n / 2] + t[n / 2 + 1]) / 2
end

local images = T.randn({opt.batch, 1, 28, 28}, 1)
local labels = {}
for i = 1, opt.batch do labels[i] = (i - 1) % 10 end
labels = T.tensor(labels, nil, {dtype = 'i32'})

-- An engine for one layout, warmed up, and a function timing one step of it.
local function prepare(layout)
  local net, sample, parts = compound()
  local parallel = {}
  if layout.placed then parallel = {placement = parts.placement, micro_batches = opt.micro_batches} end
  if layout.auto then parallel = {stages = 3, split = 'auto', micro_batches = opt.micro_batches} end
  local devices = (layout.placed or layout.auto) and 3 or 1
  local engine = T.Engine{net = net, optim = T.optim.Adam{lr = 1e-3}, parallel = parallel,
                          devices = T.devices('cpu', devices, {threads = layout.threads})}
  engine:prepare(sample, opt.batch)
  if layout.auto then
    local stages = {}
    for i, stage in ipairs(engine:stages()) do stages[i] = stage.first .. '..' .. stage.last end
    layout.stages = table.concat(stages, ' / ')
  end
  for _ = 1, opt.warmup do engine:step(images, labels) end
  return function()
    local t0 = T.now()
    engine:step(images, labels)
    return T.now() - t0
  end
end

local layouts = {
  {name = '1 device, 1 thread', threads = 1},
  {name = ('1 device, %d threads'):format(cores), threads = cores},
  {name = ('placed on 3 devices of 1 thread%s'):format(opt.micro_batches > 1 and (', %d micro-batches'):format(opt.micro_batches) or ''),
   threads = 1, placed = true},
  {name = 'split = auto on 3 devices of 1 thread', threads = 1, auto = true},
}
local steps = {}
for i, layout in ipairs(layouts) do layout.step, steps[i] = prepare(layout), {} end
for _ = 1, opt.iters do
  for i, layout in ipairs(layouts) do steps[i][#steps[i] + 1] = layout.step() end
end

print(('compound model, batch %d, on %d cores of this machine:'):format(opt.batch, cores))
local base
for i, layout in ipairs(layouts) do
  local per_s = opt.batch / median(steps[i])
  base = base or per_s
  print(('  %-40s %8.0f images/s  %5.2fx'):format(layout.name, per_s, per_s / base))
  if layout.stages then print('    its stages: ' .. layout.stages) end
end

-- The same placement on GPU machines, as the planner sees it before anything runs.
local net, sample, parts = compound()
for name in opt.topologies:gmatch('[^,]+') do
  local topology = T.plan.topology(name)
  local one = T.plan.simulate{net = net, sample = sample, cost = 'analytic', batch = opt.batch, topology = topology,
                              plan = {stages = 1}}
  local placed = T.plan.simulate{net = net, sample = sample, cost = 'analytic', batch = opt.batch,
                                 topology = topology, placement = parts.placement,
                                 plan = {stages = 3, micro_batches = opt.micro_batches}}
  local ratio = placed.images_per_s / one.images_per_s
  print(('simulated on %s: one GPU %.0f images/s, placed on 3 GPUs %.0f images/s: %.2fx'):format(
    name, one.images_per_s, placed.images_per_s, ratio))
end
