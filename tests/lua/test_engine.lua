-- T.Engine, T.optim, T.schedule, T.profile, T.MetricsLog and T.Progress from Lua.
local t = require 'tandem.test'
local T = require 'tandem'
local S = dofile('tests/lua/support.lua')
local nn = T.nn
local core = require 'tandem.core'

-- Seconds the training threads have been on a core (nil where the kernel does not count them).
local function core_training_ran() return (core.training_thread_times()) end

local function tiny_net()
  return nn.Sequential{
    nn.Conv2d(1, 4, 3, {pad = 1, bias = false}), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(4 * 4 * 4, 3),
  }
end

-- 3 classes told apart by brightness; n samples of 1x8x8.
local function toy_data(n)
  local values, labels = {}, {}
  for i = 1, n do
    local k = (i * 7) % 3
    labels[i] = k
    for j = 1, 64 do values[#values + 1] = (k - 1) + 0.3 * math.sin(i * 13 + j * 7) end
  end
  return T.data.dataset(T.tensor(values, {n, 1, 8, 8}), T.tensor(labels, {n}, {dtype = 'i32'}))
end

local function engine_for(net, seed)
  return T.Engine{net = net, loss = nn.CrossEntropy(), devices = T.devices('cpu', 1, {threads = 1}),
                  optim = T.optim.SGD{lr = 0.1, momentum = 0.9},
                  schedule = T.schedule.Cosine{lr = 0.1, total_steps = 40}, seed = seed}
end

t.test('an engine trains: the loss falls and evaluation sees it', function()
  local data = toy_data(96)
  local engine = engine_for(tiny_net(), 1)
  local order = T.data.epoch_order(data:size(), 1, 1, true)
  local first, last
  for step = 1, 24 do
    local start = ((step - 1) * 16) % 96 + 1
    local images, labels = data:batch(order, start, 16)
    local r = engine:step(images, labels)
    t.eq(r.samples, 16)
    t.ok(r.lr > 0 and r.lr <= 0.1 + 1e-6, 'lr ' .. r.lr)
    if step == 1 then first = r.loss end
    last = r.loss
  end
  t.ok(last < 0.5 * first, ('loss %g -> %g'):format(first, last))
  local result = engine:evaluate(data, {batch = 40})
  t.eq(result.samples, 96)
  t.ok(result.accuracy > 0.8, 'accuracy ' .. result.accuracy)
  t.eq(engine:steps(), 24)
end)

-- precision = 'bf16' (mixed precision): trains on a CPU with AVX512_BF16 or AMX; elsewhere
-- T.Engine says why it cannot, naming the device.
t.test("precision = 'bf16' trains where the CPU has bf16 kernels, and is refused by name elsewhere", function()
  local data = toy_data(96)
  local ok, engine = pcall(T.Engine, {net = tiny_net(), devices = T.devices('cpu', 1, {threads = 1}),
                                      optim = T.optim.SGD{lr = 0.1, momentum = 0.9}, precision = 'bf16'})
  if not ok then
    t.ok(tostring(engine):find("precision = 'bf16' cannot run on cpu:0: its CPU (", 1, true)
         and tostring(engine):find('has neither AVX512_BF16 nor AMX', 1, true), tostring(engine))
    return
  end
  local order = T.data.epoch_order(data:size(), 1, 1, true)
  local first, last
  for step = 1, 24 do
    local images, labels = data:batch(order, ((step - 1) * 16) % 96 + 1, 16)
    local r = engine:step(images, labels)
    if step == 1 then first = r.loss end
    last = r.loss
  end
  t.ok(last < 0.5 * first, ('loss %g -> %g'):format(first, last))
  t.ok(engine:evaluate(data, {batch = 40}).accuracy > 0.8, 'bf16 accuracy')
end)

-- Loss scaling (T.Engine's loss_scale): each step reports its scale and whether it was
-- skipped; engine:loss_scale() gives the scale and the steps skipped; off, neither appears.
t.test('loss_scale: the step reports its scale, a dynamic scale doubles after its window', function()
  local data = toy_data(96)
  local order = T.data.epoch_order(data:size(), 1, 1, true)
  local engine = T.Engine{net = tiny_net(), devices = T.devices('cpu', 1, {threads = 1}),
                          optim = T.optim.SGD{lr = 0.1, momentum = 0.9}, loss_scale = 'dynamic',
                          initial_loss_scale = 4, loss_scale_window = 2}
  local scales = {}
  for step = 1, 5 do
    local r = engine:step(data:batch(order, (step - 1) * 16 + 1, 16))
    t.eq(r.skipped, false)
    scales[#scales + 1] = r.loss_scale
  end
  t.eq(table.concat(scales, ' '), '4 4 8 8 16')
  local scale, skipped = engine:loss_scale()
  t.eq(scale, 16)
  t.eq(skipped, 0)
  t.eq(T.parallel.loss_scale_text(engine), ' | loss scale 16, 0 steps skipped')
  local plain = T.Engine{net = tiny_net(), devices = T.devices('cpu', 1, {threads = 1}),
                         optim = T.optim.SGD{lr = 0.1}}
  local r = plain:step(data:batch(order, 1, 16))
  t.eq(r.loss_scale, nil)
  t.eq(plain:loss_scale(), nil)
  t.eq(T.parallel.loss_scale_text(plain), '')
end)

t.test('an empty batch and a bad evaluation batch are refused, not a crash', function()
  local engine = engine_for(tiny_net(), 1)
  local images = T.tensor({}, {0, 1, 8, 8})
  local labels = T.tensor({}, {0}, {dtype = 'i32'})
  t.raises(function() engine:step(images, labels) end, {'the batch is empty'})
  t.raises(function() engine:evaluate_batch(images, labels) end, {'the batch is empty'})
  local data = toy_data(8)
  for _, bad in ipairs({0, -3, 1.5, 'x'}) do
    t.raises(function() engine:evaluate(data, {batch = bad}) end,
             {"evaluate: option 'batch' must be a positive integer"})
  end
  t.eq(engine:steps(), 0)
end)

t.test('save and load resume exactly', function()
  local data = toy_data(32)
  local order = T.data.epoch_order(32, 1, 1, false)
  local path = S.tmpname('.safetensors')
  local straight = engine_for(tiny_net(), 3)
  local half = engine_for(tiny_net(), 3)
  for step = 1, 4 do
    local images, labels = data:batch(order, (step - 1) % 2 * 16 + 1, 16)
    straight:step(images, labels)
    if step <= 2 then half:step(images, labels) end
  end
  half:save(path, {epoch = 7})
  local resumed = engine_for(tiny_net(), 99)
  local meta = assert(resumed:load(path))
  t.eq(meta.epoch, '7')
  t.eq(resumed:steps(), 2)
  for step = 3, 4 do
    resumed:step(data:batch(order, (step - 1) % 2 * 16 + 1, 16))
  end
  local a, b = straight:net():parameters(), resumed:net():parameters()
  for name, tensor in pairs(a) do t.eq(tensor:to_flat(), b[name]:to_flat(), name) end
  S.cleanup()
end)

t.test('Adam and AdamW train, resume exactly and clip by the global norm', function()
  local data = toy_data(32)
  local order = T.data.epoch_order(32, 1, 1, false)
  local path = S.tmpname('.safetensors')
  local function adam_engine(seed)
    return T.Engine{net = tiny_net(), loss = nn.CrossEntropy(), devices = T.devices('cpu', 1, {threads = 1}),
                    optim = T.optim.AdamW{lr = 0.01, betas = {0.8, 0.99}, clip_norm = 0.1}, seed = seed}
  end
  local straight, half = adam_engine(4), adam_engine(4)
  local first, last
  for step = 1, 4 do
    local images, labels = data:batch(order, (step - 1) % 2 * 16 + 1, 16)
    local r = straight:step(images, labels)
    t.ok(r.grad_norm > 0.1, 'clipping had something to do: norm ' .. r.grad_norm)
    first, last = first or r.loss, r.loss
    if step <= 2 then half:step(images, labels) end
  end
  t.ok(last < first, ('loss %g -> %g'):format(first, last))
  half:save(path)
  local resumed = adam_engine(99)
  assert(resumed:load(path))
  for step = 3, 4 do resumed:step(data:batch(order, (step - 1) % 2 * 16 + 1, 16)) end
  local a, b = straight:net():parameters(), resumed:net():parameters()
  for name, tensor in pairs(a) do t.eq(tensor:to_flat(), b[name]:to_flat(), name) end
  -- An SGD engine cannot take Adam's state, and says whose it is.
  t.raises(function() engine_for(tiny_net(), 1):load(path) end, "SGD state: entry 'exp_avg.bn1.bias' is not SGD's (SGD keeps momentum): was it saved with another optimizer?")
  t.eq(tostring(T.optim.Adam{}), 'Adam(lr 0.001, betas (0.9, 0.999), eps 1e-08, weight_decay 0)')
  t.eq(tostring(T.optim.AdamW{lr = 0.1, clip_norm = 1}),
       'AdamW(lr 0.1, betas (0.9, 0.999), eps 1e-08, weight_decay 0.01, clip_norm 1)')
  t.eq(tostring(T.optim.SGD{lr = 0.1, momentum = 0.9}), 'SGD(lr 0.1, momentum 0.9, weight_decay 0)')
  S.cleanup()
end)

t.test('losses on values: an autoencoder trains with MSE, BCEWithLogits reports its accuracy', function()
  local x = T.randn({8, 1, 4, 4}, 1)
  local targets = x:reshape{8, 16}
  local engine = T.Engine{net = nn.Sequential{nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 16)},
                          loss = nn.MSE(), optim = T.optim.Adam{lr = 0.01},
                          devices = T.devices('cpu', 1, {threads = 1})}
  local first, last
  for _ = 1, 10 do
    local r = engine:step(x, targets)
    t.eq(r.accuracy, nil)
    first, last = first or r.loss, r.loss
  end
  t.ok(last < 0.9 * first, ('loss %g -> %g'):format(first, last))
  t.eq(engine:evaluate_batch(x, targets).correct, nil)
  -- A data set of images and f32 targets: evaluate goes through it, without an accuracy.
  local regression = T.data.dataset(x, targets)
  t.eq(regression:classes(), 0)
  local result = engine:evaluate(regression, {batch = 3})
  t.eq(result.samples, 8)
  t.eq(result.accuracy, nil)
  t.near(result.loss, engine:evaluate_batch(x, targets).loss / 8, 1e-6)
  local images, batch_targets = regression:batch({2, 1})
  t.eq(batch_targets:shape(), {2, 16})
  t.eq(batch_targets:to_flat()[1], targets:to_flat()[17])
  t.raises(function() engine:step(x, T.tensor({0, 1, 0, 1, 0, 1, 0, 1}, nil, {dtype = 'i32'})) end,
           "MSE takes f32 targets shaped as the net's output, one per image: got Tensor(8, i32")
  t.raises(function() engine:step(x, T.zeros{8, 15}) end,
           "MSE: targets 8x15 and the net's output 8x16 differ in shape")
  local bce = T.Engine{net = nn.Sequential{nn.Flatten(), nn.Linear(16, 1)}, loss = nn.BCEWithLogits(),
                       optim = T.optim.SGD{lr = 0.5}, devices = T.devices('cpu', 1, {threads = 1})}
  local bright = {}
  for i = 1, 8 do bright[i] = {x:to_flat()[(i - 1) * 16 + 1] > 0 and 1 or 0} end
  local r
  for _ = 1, 20 do r = bce:step(x, T.tensor(bright)) end
  t.ok(r.accuracy >= 0.75, 'accuracy ' .. r.accuracy)
  local dy = nn.MSE():backward(T.tensor{{1, 2}}, T.tensor{{0, 0}})
  t.eq(dy:to_flat(), {1, 2})
  t.eq(nn.MSE():kind(), 'MSE')
  t.eq(tostring(nn.BCEWithLogits()), 'BCEWithLogits()')
  t.raises(function() nn.MSE{reduction = 'sum'} end, "nn.MSE: unknown option 'reduction' (it takes no options)")
  t.raises(function() nn.MSE():label_smoothing() end, 'label_smoothing belongs to CrossEntropy, not MSE')
end)

t.test('load returns nil and a message for a missing file, raises for a broken one', function()
  local engine = engine_for(tiny_net(), 1)
  local ok, msg = engine:load('/nonexistent/ck.safetensors')
  t.eq(ok, nil)
  t.ok(msg:find('no checkpoint at /nonexistent/ck.safetensors', 1, true), msg)
  local broken = S.tmpname('.safetensors')
  S.write(broken, 'not a checkpoint')
  t.raises(function() engine:load(broken) end, broken)
  S.cleanup()
end)

t.test('bad arguments raise errors that name them', function()
  local engine = engine_for(tiny_net(), 1)
  t.raises(function() T.Engine{net = tiny_net(), optim = T.optim.SGD{lr = 0.1}, bogus = 1} end,
           "unknown option 'bogus'")
  t.raises(function() T.Engine{optim = T.optim.SGD{lr = 0.1}} end, "option 'net' is required")
  t.raises(function() T.Engine{net = tiny_net()} end, "option 'optim' is required")
  t.raises(function() T.Engine{net = 5, optim = T.optim.SGD{lr = 0.1}} end, "T.Engine: option 'net' must be a net (nn.Sequential{...}), got 5")
  t.raises(function() T.Engine{net = tiny_net(), optim = {lr = 1}} end, "T.Engine: option 'optim' must be an optimizer")
  t.raises(function() T.Engine{net = tiny_net(), optim = T.optim.SGD{}, layout = 'nchw16c'} end,
           "T.Engine: option 'layout' must be 'contiguous' or 'channels_last', got 'nchw16c'")
  t.raises(function() T.optim.SGD{lr = -1} end, "T.optim.SGD: option 'lr' must be a finite number >= 0, got -1")
  t.raises(function() T.optim.SGD{learning_rate = 1} end, "unknown option 'learning_rate'")
  t.raises(function() T.optim.SGD{lr = 0.1, momentum = 5} end,
           "T.optim.SGD: option 'momentum' must be a finite number in [0, 1), got 5")
  t.raises(function() T.optim.SGD{lr = 0.1, clip_norm = -1} end, "option 'clip_norm' must be a finite number >= 0 (0: no clipping), got -1")
  t.raises(function() T.optim.Adam{betas = 0.9} end,
           "T.optim.Adam: option 'betas' must be a pair of finite numbers in [0, 1), got 0.9")
  t.raises(function() T.optim.AdamW{betas = {0.9, 1}} end, "T.optim.AdamW: option 'betas' must be a pair of finite numbers in [0, 1), got a list whose entry 2 is 1")
  t.raises(function() T.optim.Adam{eps = 0} end, "T.optim.Adam: option 'eps' must be a finite number > 0, got 0")
  t.raises(function() T.optim.Adam{lr = 'x'} end, "T.optim.Adam: option 'lr' must be a finite number >= 0, got 'x'")
  t.raises(function() T.optim.AdamW{momentum = 0.9} end, "T.optim.AdamW: unknown option 'momentum'")
  t.raises(function() T.schedule.MultiStep{lr = 1, milestones = {1.5}} end,
           "option 'milestones' must hold whole step numbers >= 0; entry 1 is 1.5")
  t.raises(function() T.schedule.MultiStep{lr = 1, milestones = {2, 1 / 0}} end,
           "option 'milestones' must hold whole step numbers >= 0; entry 2 is inf")
  t.raises(function() T.schedule.Cosine{lr = 0.1} end, 'option total_steps is required')
  t.raises(function() engine:step(T.zeros{2, 3, 8, 8}, T.tensor({0, 1}, {2}, {dtype = 'i32'})) end,
           '3 channels')
  t.raises(function() engine:step(T.zeros{2, 1, 8, 8}, T.tensor({0, 7}, {2}, {dtype = 'i32'})) end,
           'label 7 of sample 2 is outside [0, 3)')
  t.raises(function() engine:step(T.zeros{2, 1, 8, 8}, T.tensor({0, 7}, {2}, {dtype = 'i32'})) end,
           'in the loss of samples 1..2 of the batch')
  t.raises(function() engine:step(T.zeros{2, 1, 8, 8}) end, 'tandem.Tensor expected')
  t.raises(function() engine.step(nil) end, 'tandem.Engine expected')
  engine:free()
  t.raises(function() engine:steps() end, 'engine was freed')
end)

t.test('schedules give their documented values', function()
  t.near(T.schedule.Constant{lr = 0.5}:lr(100), 0.5, 1e-7)
  t.near(T.schedule.Step{lr = 1, step_size = 10, gamma = 0.5}:lr(25), 0.25, 1e-7)
  t.near(T.schedule.MultiStep{lr = 1, milestones = {5, 8}, gamma = 0.1}:lr(9), 0.01, 1e-7)
  t.near(T.schedule.Cosine{lr = 1, total_steps = 100}:lr(50), 0.5, 1e-6)
  local warm = T.schedule.Warmup{steps = 10, start_factor = 0.1,
                                 after = T.schedule.Constant{lr = 1}}
  t.near(warm:lr(0), 0.1, 1e-6)
  t.near(warm:lr(10), 1, 1e-6)
  local hybrid = T.schedule.Hybrid{lr = 1, total_steps = 100, switch = 0.5}
  t.near(hybrid:lr(100), 0, 1e-6)
  t.ok(tostring(hybrid) ~= '', 'describes itself')
end)

t.test('profile times every layer', function()
  local device = T.devices('cpu', 1, {threads = 1})[1]
  local p = T.profile(tiny_net(), {1, 8, 8}, device, {batch = 8, iterations = 2, warmup = 1})
  t.eq(#p.layers, 6)
  t.eq(p.layers[1].kind, 'Conv2d')
  t.eq(p.layers[6].output, {8, 3})
  t.ok(p.step_ms > 0 and p.train_flops > 0, 'step time and flops')
  t.raises(function() T.profile(tiny_net(), {1, 8, 8}, device, {batch = 0}) end, 'batch')
end)

t.test('metrics log writes JSON lines', function()
  local path = S.tmpname('.jsonl')
  local log = T.MetricsLog(path, {append = false})
  log:write{epoch = 1, loss = 0.25, note = 'ok'}
  log:write{epoch = 2, loss = 0.125, note = 'ok'}
  t.eq(S.read(path), '{"epoch": 1, "loss": 0.25, "note": "ok"}\n{"epoch": 2, "loss": 0.125, "note": "ok"}\n')
  t.raises(function() log:write{loss = {}} end, "metric 'loss' must be a number")
  S.cleanup()
end)

-- The training threads (the device's worker) are measured while the bar runs: the share of their
-- ready time spent waiting for a core shows in the line and the figures. Nothing trains under the
-- first bar, so it shows none.
t.test('progress bar reports the core time the training threads lost', function()
  local ran = core_training_ran()
  local idle = T.Progress{total = 1, mode = 'none'}
  idle:update(1, {}, 1)
  t.eq(idle:finish().cpu_lost, nil)

  local data = toy_data(32)
  local engine = engine_for(tiny_net(), 1)
  local order = T.data.epoch_order(data:size(), 1, 1, true)
  local bar = T.Progress{total = 4, mode = 'plain'}
  for step = 1, 4 do
    local images, labels = data:batch(order, (step - 1) * 8 + 1, 8)
    local r = engine:step(images, labels)
    bar:update(step, {loss = r.loss}, r.samples)
  end
  local figures = bar:finish()
  if ran then
    t.ok(core_training_ran() > ran, 'the worker ran')
    t.ok(figures.cpu_lost >= 0 and figures.cpu_lost < 1, tostring(figures.cpu_lost))
    t.ok(bar.line:find(' | cpu lost %d+%.%d%%'), bar.line)
  else  -- a kernel without schedstat: the figure is left out, not made up
    t.eq(figures.cpu_lost, nil)
    t.ok(not bar.line:find('cpu lost', 1, true), bar.line)
  end
  t.eq(T.Progress.cpu_lost_text(0.0312), ' | cpu lost 3.1%')
  t.eq(T.Progress.cpu_lost_text(nil), '')
end)

t.test('progress bar reports rate and metrics', function()
  local bar = T.Progress{total = 4, title = 'epoch 1', mode = 'plain'}
  for step = 1, 4 do bar:update(step, {loss = 1 / step}, 10) end
  local figures = bar:finish()
  t.ok(bar:rate() > 0, 'rate')
  t.ok(bar.line:find('4/4', 1, true) and bar.line:find('loss 0.2500', 1, true), bar.line)
  t.eq({figures.images, figures.loss}, {40, 0.25})
  t.ok(figures.images_per_s > 0 and figures.seconds >= 0)
  t.raises(function() T.Progress{total = 4, mode = 'fancy'} end,
           "T.Progress: option 'mode' must be one of 'auto', 'bar', 'plain', 'none', got 'fancy'")
end)
