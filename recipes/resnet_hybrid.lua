-- ResNet-20 (recipes/nets/resnet20.lua) trained hybrid-parallel: data parallel across worker
-- groups, pipelined model parallel inside each group. The default is 2 groups x 2 stages x 4
-- micro-batches under 1F1B on 4 CPU devices of one kernel thread each, stages cut by profiling
-- (split = 'auto'). There is no CIFAR here: the data is a synthetic 10-class colour set of
-- 3x32x32 images made in memory (recipes/data/colors.lua).
--   tandem run recipes/resnet_hybrid.lua --groups=2 --stages=2 --micro_batches=4 --schedule=1f1b
--   tandem run recipes/resnet_hybrid.lua --devices=2 --groups=1 --stages=2 --split=stage2_1,relu6
-- --devices must equal groups x stages (it defaults to that). --batch_norm=deferred folds the
-- whole batch's statistics into the running ones once per step (evaluation then matches one
-- device); --batch_norm=sync --schedule=gpipe normalises with the whole global batch's
-- statistics (exact against one device, at the cost of gathering them); --trace=FILE writes a Chrome trace of every worker (Perfetto, chrome://tracing).
local T = require 'tandem'

local opt = T.options(..., T.parallel.defaults{
  epochs = 3,
  batch = 128,
  train = 2560,           -- synthetic training images
  test = 512,             -- synthetic test images
  lr = 0.1,
  momentum = 0.9,
  weight_decay = 5e-4,
  warmup_steps = 20,
  seed = 1,
  threads = 1,            -- kernel threads of each device
  groups = 2,             -- worker groups (data parallel)
  stages = 2,             -- pipeline stages per group (model parallel)
  micro_batches = 4,      -- micro-batches each group's share of a batch is cut into
  schedule = '1f1b',      -- gpipe or 1f1b
  split = 'auto',         -- stage cuts: 'auto', layer names or indices (comma-separated), '' even
  layout = 'channels_last',
  max_steps = 0,          -- stop after this many steps (0: every epoch); for tests
  eval_batch = 256,
})

local colors = dofile(T.recipe_dir .. '/data/colors.lua')
local train = colors{n = opt.train, size = 32, classes = 10, seed = opt.seed}
local test = colors{n = opt.test, size = 32, classes = 10, seed = opt.seed + 1000}

local build = dofile(T.recipe_dir .. '/nets/resnet20.lua')
local net, sample_shape = build{classes = 10}
local steps_per_epoch = math.floor(train:size() / opt.batch)
if steps_per_epoch < 1 then
  error(('--batch=%d is larger than the training set (%d images)'):format(opt.batch, train:size()), 0)
end

local devices, parallel = T.parallel.layout(opt)
local engine = T.Engine{
  net = net,
  devices = devices,
  parallel = parallel,
  trace = opt.trace ~= '',
  optim = T.optim.SGD{lr = opt.lr, momentum = opt.momentum, nesterov = true,
                      weight_decay = opt.weight_decay},
  schedule = T.schedule.Warmup{steps = opt.warmup_steps, start_factor = 0.1,
                               after = T.schedule.Cosine{lr = opt.lr,
                                                         total_steps = steps_per_epoch * opt.epochs}},
  seed = opt.seed,
  layout = opt.layout,
}
print(net:summary(sample_shape))
T.parallel.describe(engine, opt, sample_shape)

local augment = {flip = true, crop_pad = 4}
for epoch = 1, opt.epochs do
  local bar = T.Progress{total = steps_per_epoch, title = ('epoch %d/%d'):format(epoch, opt.epochs)}
  local order = T.data.epoch_order(train:size(), opt.seed, epoch, true)
  local sums = {loss = 0, correct = 0, seen = 0}
  for b = 1, steps_per_epoch do
    local images, labels = train:batch(order, (b - 1) * opt.batch + 1, opt.batch, augment,
                                       opt.seed, epoch)
    local r = engine:step(images, labels)
    sums.loss = sums.loss + r.loss * r.samples
    sums.correct = sums.correct + r.accuracy * r.samples
    sums.seen = sums.seen + r.samples
    bar:update(b, {loss = sums.loss / sums.seen, acc = sums.correct / sums.seen, lr = r.lr}, r.samples)
    if opt.max_steps > 0 and engine:steps() >= opt.max_steps then break end
  end
  bar:finish()
  local result = engine:evaluate(test, {batch = opt.eval_batch})
  print(('epoch %d: train loss %.4f acc %.4f | test loss %.4f acc %.4f | %.0f images/s')
        :format(epoch, sums.loss / sums.seen, sums.correct / sums.seen, result.loss,
                result.accuracy, bar:rate()))
  if opt.max_steps > 0 and engine:steps() >= opt.max_steps then break end
end
T.parallel.finish(engine, opt)
