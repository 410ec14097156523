-- What the engine itself costs a step: a net so small that its kernels take microseconds, so
-- a step's time is the orchestration (stage programs, hand-offs between workers, the barrier,
-- all-reduces of a few hundred bytes, the update):
--   build/tandem run bench/engine_overhead.lua [--steps=1000] [--warmup=50] [--rounds=5]
-- Per layout, the fastest round's mean step time (the layouts take turns; other work on the
-- machine only ever adds time), and its ratio to 1x1x1 measured in the same run. Use it to compare two builds of the engine (run
-- each build in turn, a few times: on a shared machine single runs drift by tens of percent).
local T = require 'tandem'
local nn = T.nn

local opt = T.options(..., {steps = 1000, warmup = 50, rounds = 5})

local layouts = {{1, 1, 1}, {2, 1, 1}, {1, 2, 4}, {2, 2, 4}, {1, 4, 8}}
local images = T.randn({16, 1, 8, 8}, 1)
local classes = {}
for i = 1, 16 do classes[i] = (i - 1) % 3 end
local labels = T.tensor(classes, nil, {dtype = 'i32'})

local engines = {}
for i, l in ipairs(layouts) do
  local g, s, m = l[1], l[2], l[3]
  local net = nn.Sequential{nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(),
                            nn.Linear(16, 3)}
  engines[i] = T.Engine{net = net, devices = T.devices('cpu', g * s, {threads = 1}),
                        optim = T.optim.SGD{lr = 0.01, momentum = 0.9},
                        parallel = {groups = g, stages = s, micro_batches = m, pipeline = '1f1b',
                                    split = s == 4 and {2, 3, 4} or nil}}
  for _ = 1, opt.warmup do engines[i]:step(images, labels) end
end

local times = {}
for i = 1, #layouts do times[i] = {} end
for _ = 1, opt.rounds do
  for i, engine in ipairs(engines) do
    local t0 = T.now()
    for _ = 1, opt.steps do engine:step(images, labels) end
    table.insert(times[i], (T.now() - t0) / opt.steps)
  end
end

print(('engine overhead: a 6-layer net of 3.2k weights, batch 16, %d steps x %d rounds per layout (1f1b)')
      :format(opt.steps, opt.rounds))
print(('%-8s %12s %8s'):format('layout', 'us a step', 'ratio'))
local base
for i, l in ipairs(layouts) do
  local us = math.min(unpack(times[i])) * 1e6
  base = base or us
  print(('%-8s %12.1f %8.2f'):format(('%dx%dx%d'):format(l[1], l[2], l[3]), us, us / base))
end
