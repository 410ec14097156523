-- The training loop the hybrid-parallel recipes share: a net of recipes/nets/ trained on the
-- synthetic 10-class colour set (recipes/data/colors.lua) of size x size images, on the devices
-- and layout of the recipe's T.parallel options; a progress bar and test accuracy each epoch.
--   local colors = dofile(T.recipe_path('lib/train_colors.lua'))
--   local opt = T.options(..., colors.defaults{batch = 128, lr = 0.1, groups = 2})
--   colors.train{opt = opt, net = 'resnet20', size = 32}
local T = require 'tandem'

local M = {}

-- The options every such recipe takes, with its own defaults over these (and the T.parallel
-- options under them).
function M.defaults(recipe)
  local own = {
    epochs = {3, 'passes over the training set', kind = 'positive_int'},
    batch = {64, 'images a step (the global batch, shared by the groups)', kind = 'positive_int'},
    train = {1536, 'synthetic training images', kind = 'positive_int'},
    test = {384, 'synthetic test images', kind = 'positive_int'},
    lr = {0.02, 'the peak learning rate (cosine decay after the warm-up)', kind = 'positive_number'},
    momentum = {0.9, 'SGD (Nesterov) momentum', kind = 'fraction'},
    weight_decay = {5e-4, 'L2 weight decay', kind = 'nonneg_number'},
    warmup_steps = {20, 'steps of linear learning-rate warm-up', kind = 'nonneg_int'},
    seed = {1, 'the seed of the weights, the data and the augmentation', kind = 'nonneg_int'},
    layout = {'channels_last', 'the activation layout', choices = {'contiguous', 'channels_last'}},
    max_steps = {0, 'stop after this many steps (0: every epoch)', kind = 'nonneg_int'},
    eval_batch = {256, 'images a step when testing', kind = 'positive_int'},
    progress = T.Progress.option,
    -- The parallel options' defaults for these recipes: a two-stage 1F1B pipeline.
    threads = 1, stages = 2, micro_batches = 4, pipeline = '1f1b', split = 'auto',
  }
  local override = require('tandem.command_line').override
  return T.parallel.defaults(override(own, recipe))
end

function M.train(args)
  local opt, net_name, size = args.opt, args.net, args.size
  local colors = dofile(T.recipe_path('data/colors.lua'))
  local train = colors{n = opt.train, size = size, classes = 10, seed = opt.seed}
  local test = colors{n = opt.test, size = size, classes = 10, seed = opt.seed + 1000}

  local build = dofile(T.recipe_path('nets/' .. net_name .. '.lua'))
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
    precision = opt.precision,
    loss_scale = opt.loss_scale,
    initial_loss_scale = opt.initial_loss_scale,
  }
  print(net:summary(sample_shape))
  T.parallel.describe(engine, opt, sample_shape)

  local augment = {flip = true, crop_pad = 4}
  for epoch = 1, opt.epochs do
    local bar = T.Progress{total = steps_per_epoch, title = ('epoch %d/%d'):format(epoch, opt.epochs),
                           mode = opt.progress}
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
    local trained = bar:finish()  -- the epoch's figures: the whole job's under MPI
    local result = engine:evaluate(test, {batch = opt.eval_batch})
    print(('epoch %d: train loss %.4f acc %.4f | test loss %.4f acc %.4f | %.0f images/s')
          :format(epoch, trained.loss, trained.acc, result.loss, result.accuracy, trained.images_per_s)
          .. T.parallel.loss_scale_text(engine))
    if opt.max_steps > 0 and engine:steps() >= opt.max_steps then break end
  end
  T.parallel.finish(engine, opt)
end

return M
