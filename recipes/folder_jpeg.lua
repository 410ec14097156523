-- Train a small CNN on a folder of JPEGs (one sub-folder per class) or an LMDB database made
-- by `tandem mkdb`, read and augmented by the threaded T.data.Loader: random crops of images
-- resized to a shorter side, flips, colour jitter, normalisation, straight into the device's
-- layout. --channels=1 trains on greyscale images.
--   tandem run recipes/folder_jpeg.lua --train=photos/train --val=photos/val --size=64
-- Without --train it makes a synthetic set first (`tandem gen-images`: 8 classes of coloured
-- shapes, 64-256 px) under data/synthetic_jpeg, so the recipe runs anywhere.
-- Each epoch prints validation accuracy, images/s and the share of step time spent waiting
-- for data; the metrics log gets the loader's stage rates too.
local T = require 'tandem'

local opt = T.options(..., T.parallel.defaults{
  train = {'', "the training images: a folder (one sub-folder per class) or an LMDB database from "
               .. "`tandem mkdb`; '': a synthetic set", kind = 'dir'},
  val = {'', "the validation images, as --train; '': none (a synthetic one with a synthetic --train)",
         kind = 'dir'},
  channels = {3, 'colour (3) or greyscale (1): every image is decoded to this', choices = {3, 1}},
  synthetic = {'data/synthetic_jpeg', 'where the synthetic set is made when --train is not given'},
  classes = {8, 'classes of the synthetic set', kind = 'positive_int'},
  per_class = {64, 'training images a class of the synthetic set', kind = 'positive_int'},
  epochs = {5, 'passes over the training set', kind = 'positive_int'},
  batch = {32, 'images a step (the global batch, shared by the groups)', kind = 'positive_int'},
  size = {64, 'the crop fed to the net (pixels a side)', kind = 'positive_int'},
  resize = {72, 'the shorter side images are resized to before cropping', kind = 'positive_int'},
  lr = {0.05, 'the peak learning rate (cosine decay)', kind = 'positive_number'},
  momentum = {0.9, 'SGD (Nesterov) momentum', kind = 'fraction'},
  weight_decay = {5e-4, 'L2 weight decay', kind = 'nonneg_number'},
  seed = {1, 'the seed of the weights, the data order and the augmentation', kind = 'nonneg_int'},
  data_threads = {2, "the loader's decode and augmentation threads", kind = 'positive_int'},
  layout = {'auto', "the activation layout (auto: the device kind's fastest)",
            choices = {'auto', 'contiguous', 'channels_last'}},
  max_steps = {0, 'stop after this many steps (0: every epoch)', kind = 'nonneg_int'},
  log = {'logs/folder_jpeg.jsonl', 'the metrics log (JSON lines)'},
  progress = T.Progress.option,
})
opt.layout = T.parallel.data_layout(opt)

-- A synthetic set (train and val with different seeds) when no folder is given.
local function tandem_command(args)
  local host = require 'tandem.host'
  local q = function(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
  local parts = {q(host.executable)}
  for _, a in ipairs(args) do parts[#parts + 1] = q(a) end
  local cmd = table.concat(parts, ' ')
  assert(os.execute(cmd .. ' >/dev/null') == 0, 'failed: ' .. cmd)
end
if opt.train == '' then
  opt.train, opt.val = opt.synthetic .. '/train', opt.synthetic .. '/val'
  -- Under MPI rank 0 makes the set; the others wait for it.
  for _, part in ipairs{{opt.train, opt.per_class, 1}, {opt.val, math.max(4, opt.per_class / 4), 2}} do
    if T.mpi.rank() == 0 and not T.data.folder(part[1]) then
      tandem_command{'gen-images', part[1], '--classes=' .. opt.classes,
                     '--per-class=' .. math.floor(part[2]), '--seed=' .. part[3]}
    end
  end
  T.mpi.barrier()
end

-- An image folder, or an LMDB database (a folder holding data.mdb).
local function images(path)
  local f = io.open(path .. '/data.mdb', 'rb')
  if f then f:close() return T.data.lmdb(path) end
  return assert(T.data.folder(path))
end

local mean, std = {}, {}
for c = 1, opt.channels do mean[c], std[c] = 0.5, 0.25 end
local source = images(opt.train)
local build = dofile(T.recipe_path('nets/smallcolor.lua'))
local net, sample_shape = build{classes = source:classes(), size = opt.size, channels = opt.channels}
local devices, parallel = T.parallel.layout(opt, net, sample_shape)
local train = T.data.Loader{
  source = source, threads = opt.data_threads,
  batch = select(2, T.parallel.share(1, opt.batch)),  -- under MPI: this rank's part
  shard = {index = T.mpi.rank() + 1, count = T.mpi.size()},  -- under MPI: each rank its shard
  seed = opt.seed, layout = opt.layout, device = devices[1],
  transforms = {channels = opt.channels, resize = opt.resize, crop = opt.size, random_crop = true,
                flip = true, brightness = 0.2, contrast = 0.2,
                saturation = opt.channels == 3 and 0.2 or nil, mean = mean, std = std},
}
local val = opt.val ~= '' and T.data.Loader{
  source = images(opt.val), batch = opt.batch, threads = opt.data_threads,
  shuffle = false, last = 'keep', layout = opt.layout, device = devices[1],
  transforms = {channels = opt.channels, resize = opt.resize, crop = opt.size, mean = mean, std = std},
}
print(('%s; %d batches of %d per epoch'):format(tostring(train), train:batches_per_epoch(), opt.batch))
-- Under MPI the ranks' shards may differ by a batch: all stop at the shortest.
local steps_per_epoch = T.mpi.all_reduce({train:batches_per_epoch()}, 'min')[1]
local engine = T.Engine{
  net = net, loss = T.nn.CrossEntropy(), devices = devices, parallel = parallel,
  trace = opt.trace ~= '',
  optim = T.optim.SGD{lr = opt.lr, momentum = opt.momentum, nesterov = true,
                      weight_decay = opt.weight_decay},
  schedule = T.schedule.Cosine{lr = opt.lr, total_steps = steps_per_epoch * opt.epochs},
  seed = opt.seed, layout = opt.layout, precision = opt.precision,
  loss_scale = opt.loss_scale, initial_loss_scale = opt.initial_loss_scale,
}
print(net:summary(sample_shape))
T.parallel.describe(engine, opt, sample_shape)

local log = T.MetricsLog(opt.log)
for epoch = 1, opt.epochs do
  local bar = T.Progress{total = steps_per_epoch, title = ('epoch %d/%d'):format(epoch, opt.epochs),
                         mode = opt.progress}
  local sums = {loss = 0, correct = 0, seen = 0}
  local waited, warm_start, data_wait, b = 0, nil, 0, 0
  train:start(epoch)
  while b < steps_per_epoch do
    local t0 = T.now()
    local images, labels = train:next()
    if not images then break end
    local t1 = T.now()
    b = b + 1
    if b == 1 then warm_start = t1 else waited = waited + (t1 - t0) end
    local r = engine:step(images, labels)
    sums.loss = sums.loss + r.loss * r.samples
    sums.correct = sums.correct + r.accuracy * r.samples
    sums.seen = sums.seen + r.samples
    if b > 1 then data_wait = waited / (T.now() - warm_start) end
    bar:update(b, {loss = sums.loss / sums.seen, acc = sums.correct / sums.seen}, r.samples, data_wait)
    if opt.max_steps > 0 and engine:steps() >= opt.max_steps then break end
  end
  local trained = bar:finish()  -- the epoch's figures: the whole job's under MPI
  local result = val and engine:evaluate(val) or {loss = 0, accuracy = 0}
  local st = train:stats()
  print(('epoch %d: train loss %.4f acc %.4f | val loss %.4f acc %.4f | %.0f images/s | data wait %.2f%%%s | decode %.0f images/s per thread')
        :format(epoch, trained.loss, trained.acc, result.loss, result.accuracy, trained.images_per_s,
                100 * data_wait, T.Progress.cpu_lost_text(trained.cpu_lost), st.decode_rate)
        .. T.parallel.loss_scale_text(engine))
  log:write{epoch = epoch, step = engine:steps(), train_loss = trained.loss,
            train_accuracy = trained.acc, val_loss = result.loss,
            val_accuracy = result.accuracy, images_per_s = trained.images_per_s, data_wait = data_wait,
            cpu_lost = trained.cpu_lost,
            read_rate = st.read_rate, decode_rate = st.decode_rate,
            assemble_rate = st.assemble_rate, skipped = st.skipped}
  if opt.max_steps > 0 and engine:steps() >= opt.max_steps then break end
end
train:close()
if val then val:close() end
T.parallel.finish(engine, opt)
