-- Model averaging against synchronous SGD (the third seed's fully connected nets, issue 18): a
-- multilayer perceptron on Fashion-MNIST trained on 2 and 4 CPU devices, one data-parallel
-- group each, by synchronous all-reduce of the gradients ('sync') and by each averaging
-- algorithm of T.Engine's parallel table ('plain', 'bmuf', 'easgd', 'momentum'; every
-- --average_every steps, docs/lua-api.md). Every run starts from the same weights and visits
-- the same batches; each epoch prints the training loss and accuracy, the test accuracy and
-- the images/s of the training steps, and a table at the end compares them.
--   tandem run recipes/mlp_averaging.lua --epochs=3 --devices=2,4 --methods=sync,bmuf
--   tandem run recipes/mlp_averaging.lua --train=600 --test=200 --epochs=1   (a quick look)
-- Between two averages the groups' weights differ (under 'easgd' always): the test accuracy
-- is then each group's on its share of every test batch.
local T = require 'tandem'
local nn = T.nn

local opt = T.options(..., {
  data = {'/usr/share/datasets/fashion-mnist', 'the folder of the Fashion-MNIST idx files', kind = 'dir'},
  epochs = {3, 'passes over the training set, for each method and device count', kind = 'positive_int'},
  batch = {256, 'images a step (the global batch, shared by the groups)', kind = 'positive_int'},
  hidden = {'1024,512', 'the widths of the hidden layers, comma-separated'},
  lr = {0.05, "SGD's learning rate", kind = 'positive_number'},
  momentum = {0.9, 'SGD momentum', kind = 'fraction'},
  devices = {'2,4', 'the device counts to train on (one group each), comma-separated'},
  methods = {'sync,plain,bmuf,easgd,momentum', "what trains: 'sync' (all-reduced gradients) and averaging algorithms"},
  average_every = {8, 'steps between two averages', kind = 'positive_int'},
  block_momentum = {0, "bmuf's block momentum, in [0, 1) (0: 1 - 1/devices)", kind = 'fraction'},
  block_lr = {1, "bmuf's block learning rate", kind = 'positive_number'},
  block_nesterov = {true, "bmuf's Nesterov-style block momentum"},
  elastic_alpha = {0, "easgd's moving rate (0: 0.9/devices)", kind = 'nonneg_number'},
  threads = {1, 'kernel threads of each CPU device', kind = 'positive_int'},
  train = {0, 'training images used (0: all 60000)', kind = 'nonneg_int'},
  test = {0, 'test images used (0: all 10000)', kind = 'nonneg_int'},
  seed = {1, 'the seed of the weights and the data order', kind = 'nonneg_int'},
  eval_batch = {1000, 'images a step when testing', kind = 'positive_int'},
  progress = T.Progress.option,
})

local function list(text, what, convert)
  local out = {}
  for item in tostring(text):gmatch('[^,%s]+') do
    local v = convert(item)
    if v == nil then error(('--%s: %q is not one of its values'):format(what, item), 0) end
    out[#out + 1] = v
  end
  if #out == 0 then error(('--%s lists nothing'):format(what), 0) end
  return out
end
local known = {sync = true, plain = true, bmuf = true, easgd = true, momentum = true}
local methods = list(opt.methods, 'methods', function(m) return known[m] and m or nil end)
local device_counts = list(opt.devices, 'devices', function(n)
  n = tonumber(n)
  return n and n >= 1 and n == math.floor(n) and n or nil
end)
local hidden = list(opt.hidden, 'hidden', function(n)
  n = tonumber(n)
  return n and n >= 1 and n == math.floor(n) and n or nil
end)

local mean, std = 0.2860, 0.3530   -- Fashion-MNIST's pixel statistics
local function load(split, limit)
  local ds = T.data.mnist_split(opt.data, split, {mean = mean, std = std})
  if limit == 0 or limit >= ds:size() then return ds end
  return T.data.dataset(ds:batch(T.data.epoch_order(ds:size(), 0, 0, false), 1, limit))
end
local train = load('train', opt.train)
local test = load('t10k', opt.test)
local steps_per_epoch = math.floor(train:size() / opt.batch)
if steps_per_epoch < 1 then
  error(('--batch=%d is larger than the %d training images'):format(opt.batch, train:size()), 0)
end

local function mlp()
  local layers, width = {nn.Flatten()}, 28 * 28
  for _, h in ipairs(hidden) do
    layers[#layers + 1] = nn.Linear(width, h)
    layers[#layers + 1] = nn.ReLU()
    width = h
  end
  layers[#layers + 1] = nn.Linear(width, 10)
  return nn.Sequential(layers)
end
print(mlp():summary{1, 28, 28})
print(('%d training and %d test images, batch %d, %d steps an epoch, averages every %d steps')
      :format(train:size(), test:size(), opt.batch, steps_per_epoch, opt.average_every))

-- T.Engine's parallel table for a method on `n` devices; each algorithm takes its own options.
local function parallel_for(method, n)
  if method == 'sync' then return {groups = n} end
  local p = {groups = n, average_every = opt.average_every, averaging = method}
  if method == 'bmuf' then
    p.block_momentum, p.block_lr, p.block_nesterov = opt.block_momentum, opt.block_lr, opt.block_nesterov
  elseif method == 'easgd' then
    p.elastic_alpha = opt.elastic_alpha
  end
  return p
end

-- One method on `n` devices: its epochs, and its last test accuracy and mean images/s.
local function run(method, n)
  local engine = T.Engine{
    net = mlp(), seed = opt.seed,
    devices = T.devices('cpu', n, {threads = opt.threads}),
    optim = T.optim.SGD{lr = opt.lr, momentum = opt.momentum},
    parallel = parallel_for(method, n),
  }
  local label = ('%-8s x%d'):format(method, n)
  local accuracy, seconds, images = 0, 0, 0
  for epoch = 1, opt.epochs do
    local bar = T.Progress{total = steps_per_epoch, title = ('%s epoch %d/%d'):format(label, epoch, opt.epochs),
                           mode = opt.progress}
    local order = T.data.epoch_order(train:size(), opt.seed, epoch, true)
    local loss, correct, seen, stepping = 0, 0, 0, 0
    for b = 1, steps_per_epoch do
      local x, y = train:batch(order, (b - 1) * opt.batch + 1, opt.batch)
      local t0 = T.now()
      local r = engine:step(x, y)
      stepping = stepping + (T.now() - t0)
      loss, correct, seen = loss + r.loss * r.samples, correct + r.accuracy * r.samples, seen + r.samples
      bar:update(b, {loss = loss / seen, acc = correct / seen}, r.samples)
    end
    bar:finish()
    accuracy = engine:evaluate(test, {batch = opt.eval_batch}).accuracy
    seconds, images = seconds + stepping, images + seen
    print(('%s epoch %d: train loss %.4f acc %.4f | test acc %.4f | %.0f images/s')
          :format(label, epoch, loss / seen, correct / seen, accuracy, seen / stepping))
  end
  return accuracy, images / seconds
end

local results = {}
for _, n in ipairs(device_counts) do
  for _, method in ipairs(methods) do
    local accuracy, rate = run(method, n)
    results[#results + 1] = {method = method, devices = n, accuracy = accuracy, rate = rate}
  end
end
print(('\n%-9s %7s %9s %10s %8s'):format('method', 'devices', 'test acc', 'images/s', 'vs sync'))
for _, r in ipairs(results) do
  local sync
  for _, s in ipairs(results) do
    if s.method == 'sync' and s.devices == r.devices then sync = s end
  end
  print(('%-9s %7d %9.4f %10.0f %8s'):format(r.method, r.devices, r.accuracy, r.rate,
                                             sync and ('%.2fx'):format(r.rate / sync.rate) or '-'))
end
