-- The default recipe: a small batch-norm CNN on Fashion-MNIST (Debian's dataset-fashion-mnist),
-- on one CPU device. `make run` runs it; options come from the command line:
--   tandem run recipes/fashion_mnist.lua --epochs=3 --batch=256 --threads=2
-- Each epoch: a progress bar (loss, accuracy, images/s, the share of step time spent waiting
-- for data), test accuracy, a metrics line in the log (JSON lines) and a checkpoint;
-- --resume=PATH continues a run exactly; --target_accuracy=0.925 stops at the first epoch whose
-- test accuracy reaches 92.5% (the learning rate still decays over --epochs).
-- --source=lmdb trains from an LMDB database (made by `tandem import-idx` when missing) through
-- the threaded T.data.Loader, with the same flips and padded crops; the default keeps the
-- training set in memory.
local T = require 'tandem'

local opt = T.options(..., T.parallel.defaults{
  data = {'/usr/share/datasets/fashion-mnist', 'the folder of the Fashion-MNIST idx files', kind = 'dir'},
  epochs = {10, 'passes over the training set', kind = 'positive_int'},
  batch = {128, 'images a step (the global batch, shared by the groups)', kind = 'positive_int'},
  lr = {0.1, 'the peak learning rate (cosine decay after the warm-up)', kind = 'positive_number'},
  momentum = {0.9, 'SGD momentum', kind = 'fraction'},
  weight_decay = {5e-4, 'L2 weight decay', kind = 'nonneg_number'},
  label_smoothing = {0.0, 'the cross-entropy\'s label smoothing', kind = 'fraction'},
  warmup_steps = {200, 'steps of linear learning-rate warm-up', kind = 'nonneg_int'},
  flip = {true, 'random horizontal flips'},
  crop_pad = {2, 'random crops from images padded by this many pixels (0: none)', kind = 'nonneg_int'},
  seed = {1, 'the seed of the weights, the data order and the augmentation', kind = 'nonneg_int'},
  layout = {'auto', "the activation layout (auto: the device kind's fastest)",
            choices = {'auto', 'contiguous', 'channels_last'}},
  max_steps = {0, 'stop after this many steps (0: run every epoch)', kind = 'nonneg_int'},
  target_accuracy = {0, 'stop after the first epoch whose test accuracy reaches this (0: run every epoch)',
                     kind = 'fraction'},
  eval_batch = {1000, 'images a step when testing', kind = 'positive_int'},
  checkpoints = {'checkpoints/fashion_mnist', 'the folder of the checkpoints (one each epoch)'},
  log = {'logs/fashion_mnist.jsonl', 'the metrics log (JSON lines)'},
  resume = {'', "continue exactly from this checkpoint ('': start afresh)", kind = 'file'},
  source = {'memory', 'the training set: in memory, or an LMDB database through T.data.Loader',
            choices = {'memory', 'lmdb'}},
  lmdb = {'data/fashion_mnist_train_lmdb', 'the LMDB database (--source=lmdb; made when missing)'},
  data_threads = {2, "the loader's decode threads (--source=lmdb)", kind = 'positive_int'},
  progress = T.Progress.option,
})
opt.layout = T.parallel.data_layout(opt)

local mean, std = 0.2860, 0.3530   -- Fashion-MNIST's pixel statistics
local train = opt.source ~= 'lmdb' and T.data.mnist_split(opt.data, 'train', {mean = mean, std = std})
local test = T.data.mnist_split(opt.data, 't10k', {mean = mean, std = std})

-- The LMDB path: the training set through the three-stage loader.
local loader
if opt.source == 'lmdb' then
  local f = io.open(opt.lmdb .. '/data.mdb', 'rb')
  if f then
    f:close()
  else
    local host = require 'tandem.host'
    local q = function(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
    local cmd = table.concat({q(host.executable), 'import-idx',
                              q(opt.data .. '/train-images-idx3-ubyte.gz'),
                              q(opt.data .. '/train-labels-idx1-ubyte.gz'), q(opt.lmdb)}, ' ')
    assert(os.execute(cmd) == 0, 'could not build ' .. opt.lmdb .. ' with: ' .. cmd)
  end
  loader = T.data.Loader{
    source = assert(T.data.lmdb(opt.lmdb)), threads = opt.data_threads,
    batch = select(2, T.parallel.share(1, opt.batch)),  -- under MPI: this rank's part
    seed = opt.seed, layout = opt.layout,
    shard = {index = T.mpi.rank() + 1, count = T.mpi.size()},  -- under MPI: each rank its shard
    transforms = {crop = 28, pad = opt.crop_pad, random_crop = opt.crop_pad > 0,
                  flip = opt.flip, mean = mean, std = std},
  }
end
-- The log's `elapsed` counts from here: building the net, planning, training, testing and the
-- earlier epochs' checkpoints, not reading the data (bench/race.py times the recipe to a test
-- accuracy with it).
local started = T.now()

local build = dofile(T.recipe_path('nets/smallbn.lua'))
local net, sample_shape = build{classes = test:classes()}
local steps_per_epoch = loader and loader:batches_per_epoch()
                        or math.floor(train:size() / opt.batch)
-- Under MPI the ranks' shards may differ by a batch: all stop at the shortest.
steps_per_epoch = T.mpi.all_reduce({steps_per_epoch}, 'min')[1]
local total_steps = steps_per_epoch * opt.epochs

local devices, parallel = T.parallel.layout(opt, net, sample_shape)
local engine = T.Engine{
  net = net,
  loss = T.nn.CrossEntropy{label_smoothing = opt.label_smoothing},
  devices = devices,
  parallel = parallel,
  trace = opt.trace ~= '',
  optim = T.optim.SGD{lr = opt.lr, momentum = opt.momentum, nesterov = true,
                      weight_decay = opt.weight_decay},
  schedule = T.schedule.Warmup{steps = opt.warmup_steps, start_factor = 0.1,
                               after = T.schedule.Cosine{lr = opt.lr, total_steps = total_steps}},
  seed = opt.seed,
  layout = opt.layout,
  precision = opt.precision,
  loss_scale = opt.loss_scale,
  initial_loss_scale = opt.initial_loss_scale,
}
print(net:summary(sample_shape))
T.parallel.describe(engine, opt, sample_shape)

local first_epoch = 1
if opt.resume ~= '' then
  local meta = assert(engine:load(opt.resume))
  first_epoch = tonumber(meta.epoch) + 1
  print(('resumed from %s: epoch %d done, step %d'):format(opt.resume, meta.epoch, engine:steps()))
end

local log = T.MetricsLog(opt.log)
local augment = {flip = opt.flip, crop_pad = opt.crop_pad}
for epoch = first_epoch, opt.epochs do
  local bar = T.Progress{total = steps_per_epoch, title = ('epoch %d/%d'):format(epoch, opt.epochs),
                         mode = opt.progress}
  local fetch
  if loader then
    loader:start(epoch)
    fetch = function() return loader:next() end
  else
    local order = T.data.epoch_order(train:size(), opt.seed, epoch, true)
    fetch = function(b)
      local first, count = T.parallel.share((b - 1) * opt.batch + 1, opt.batch)  -- MPI: our part
      return train:batch(order, first, count, augment, opt.seed, epoch)
    end
  end
  local sums = {loss = 0, correct = 0, seen = 0}
  -- Data wait: time spent getting batches after the first (the pipeline filling), as a share
  -- of the time since that first batch arrived.
  local waited, warm_start, data_wait = 0, nil, 0
  local step_seconds = {}  -- each engine:step after the first (warm) one
  for b = 1, steps_per_epoch do
    local t0 = T.now()
    local images, labels = fetch(b)
    if not images then break end
    local t1 = T.now()
    if b == 1 then warm_start = t1 else waited = waited + (t1 - t0) end
    local r = engine:step(images, labels)
    if b > 1 then step_seconds[#step_seconds + 1] = T.now() - t1 end
    sums.loss = sums.loss + r.loss * r.samples
    sums.correct = sums.correct + r.accuracy * r.samples
    sums.seen = sums.seen + r.samples
    if b > 1 then data_wait = waited / (T.now() - warm_start) end
    bar:update(b, {loss = sums.loss / sums.seen, acc = sums.correct / sums.seen, lr = r.lr},
               r.samples, data_wait)
    if opt.max_steps > 0 and engine:steps() >= opt.max_steps then break end
  end
  local trained = bar:finish()  -- the epoch's figures: the whole job's under MPI
  if epoch == first_epoch then T.parallel.compare(opt, step_seconds) end
  local result = engine:evaluate(test, {batch = opt.eval_batch})
  local elapsed = T.now() - started
  print(('epoch %d: train loss %.4f acc %.4f | test loss %.4f acc %.4f | %.0f images/s | data wait %.2f%%%s')
        :format(epoch, trained.loss, trained.acc, result.loss, result.accuracy, trained.images_per_s,
                100 * data_wait, T.Progress.cpu_lost_text(trained.cpu_lost))
        .. T.parallel.loss_scale_text(engine))
  log:write{epoch = epoch, step = engine:steps(), train_loss = trained.loss,
            train_accuracy = trained.acc, test_loss = result.loss,
            test_accuracy = result.accuracy, images_per_s = trained.images_per_s,
            seconds = trained.seconds, data_wait = data_wait, cpu_lost = trained.cpu_lost,
            elapsed = elapsed}
  engine:save(('%s/epoch%d.safetensors'):format(opt.checkpoints, epoch), {epoch = epoch})
  if opt.max_steps > 0 and engine:steps() >= opt.max_steps then break end
  if opt.target_accuracy > 0 and result.accuracy >= opt.target_accuracy then break end
end
T.parallel.finish(engine, opt)
if loader then loader:close() end
