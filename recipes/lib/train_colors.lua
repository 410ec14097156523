-- The training loop the hybrid-parallel recipes share: a net of recipes/nets/ trained on the
-- synthetic 10-class colour set (recipes/data/colors.lua) of size x size images, on the devices
-- and layout of the recipe's T.parallel options; a progress bar and test accuracy each epoch.
--   local colors = dofile(T.recipe_dir .. '/lib/train_colors.lua')
--   local opt = T.options(..., colors.defaults{batch = 128, lr = 0.1, groups = 2})
--   colors.train{opt = opt, net = 'resnet20', size = 32}
local T = require 'tandem'

local M = {}

-- The options every such recipe takes, with its own defaults over these (and the T.parallel
-- options under them).
function M.defaults(recipe)
  local all = {
    epochs = 3,
    batch = 64,
    train = 1536,           -- synthetic training images
    test = 384,             -- synthetic test images
    lr = 0.02,
    momentum = 0.9,
    weight_decay = 5e-4,
    warmup_steps = 20,
    seed = 1,
    threads = 1,            -- kernel threads of each device
    groups = 1,             -- worker groups (data parallel)
    stages = 2,             -- pipeline stages per group (model parallel)
    micro_batches = 4,      -- micro-batches each group's share of a batch is cut into
    pipeline = '1f1b',      -- the pipeline schedule: gpipe or 1f1b
    split = 'auto',         -- stage cuts: 'auto', layer names or indices (comma-separated), '' even
    layout = 'channels_last',
    max_steps = 0,          -- stop after this many steps (0: every epoch); for tests
    eval_batch = 256,
  }
  for k, v in pairs(recipe) do all[k] = v end
  return T.parallel.defaults(all)
end

function M.train(args)
  local opt, net_name, size = args.opt, args.net, args.size
  local colors = dofile(T.recipe_dir .. '/data/colors.lua')
  local train = colors{n = opt.train, size = size, classes = 10, seed = opt.seed}
  local test = colors{n = opt.test, size = size, classes = 10, seed = opt.seed + 1000}

  local build = dofile(T.recipe_dir .. '/nets/' .. net_name .. '.lua')
  local net, sample_shape = build{classes = 10}
  local steps_per_epoch = math.floor(train:size() / opt.batch)
  if steps_per_epoch < 1 then
    error(('--batch=%d is larger than the training set (%d images)'):format(opt.batch, train:size()), 0)
  end

  local devices, parallel = T.parallel.layout(opt, net, sample_shape)
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
      local first, count = T.parallel.share((b - 1) * opt.batch + 1, opt.batch)  -- MPI: our part
      local images, labels = train:batch(order, first, count, augment, opt.seed, epoch)
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
end

return M
