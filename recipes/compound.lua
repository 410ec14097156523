-- The third seed's compound model, trained with layer-division model parallelism: an LSTM over
-- a sequence (the user's immediate interest), an autoencoder compressing a vector of features
-- (trained on its reconstruction beside the prediction: nn.AddLoss), and an attention network
-- whose weights say what the prediction looked at (interpretability), joined by a classifier
-- head. Each sub-model runs on a device of its own (--placement, three stages by default), so
-- the LSTM and the autoencoder compute at the same time; --placement= trains on one device.
--
-- The seed's data (mobile-game purchases) is private. Here Fashion-MNIST stands in: an image's
-- 28 rows are the sequence (28 steps of 28 values), its 4x4-pooled pixels the feature vector
-- (49 values), its class the label. Every parallel option applies (groups, micro-batches under
-- either pipeline schedule). At the end, the rows the attention weighs most for each class.
--   tandem run recipes/compound.lua --epochs=2
--   tandem run recipes/compound.lua --placement= --max_steps=50    (one device, to compare)
local T = require 'tandem'

-- The net, and its sub-models one to a stage: the LSTM; the autoencoder; attention and head.
local compound = dofile(T.recipe_path('nets/compound.lua'))
local _, _, parts = compound()
local stages = {}
for s, names in ipairs(parts.placement) do stages[s] = table.concat(names, ',') end

local opt = T.options(..., T.parallel.defaults{
  data = {'/usr/share/datasets/fashion-mnist', 'the folder of the Fashion-MNIST idx files', kind = 'dir'},
  epochs = {2, 'passes over the training set', kind = 'positive_int'},
  batch = {128, 'images a step (the global batch, shared by the groups)', kind = 'positive_int'},
  lr = {2e-3, "Adam's learning rate", kind = 'positive_number'},
  hidden = {128, "the LSTM's hidden size", kind = 'positive_int'},
  code = {16, "the autoencoder's code width", kind = 'positive_int'},
  reconstruction = {0.5, "the reconstruction loss's weight beside the prediction's", kind = 'nonneg_number'},
  seed = {1, 'the seed of the weights and the data order', kind = 'nonneg_int'},
  max_steps = {0, 'stop after this many steps (0: run every epoch)', kind = 'nonneg_int'},
  eval_batch = {1000, 'images a step when testing', kind = 'positive_int'},
  progress = T.Progress.option,
  placement = table.concat(stages, '/'),
})

local train = T.data.mnist_split(opt.data, 'train')
local test = T.data.mnist_split(opt.data, 't10k')

local net, sample_shape, built = compound{hidden = opt.hidden, code = opt.code, reconstruction = opt.reconstruction}
local attention = built.attention

local steps_per_epoch = T.mpi.all_reduce({math.floor(train:size() / opt.batch)}, 'min')[1]
local devices, parallel = T.parallel.layout(opt, net, sample_shape)
local engine = T.Engine{net = net, devices = devices, parallel = parallel, optim = T.optim.Adam{lr = opt.lr},
                        seed = opt.seed, trace = opt.trace ~= ''}
print(net:summary(sample_shape))
T.parallel.describe(engine, opt, sample_shape)

local function evaluate()
  local order = T.data.epoch_order(test:size(), 0, 0, false)
  local loss, correct, count = 0, 0, 0
  for first = 1, test:size(), opt.eval_batch do
    local images, labels = test:batch(order, first, math.min(opt.eval_batch, test:size() - first + 1))
    local s = engine:evaluate_batch(images, labels)
    loss, correct, count = loss + s.loss, correct + s.correct, count + s.count
  end
  return loss / count, correct / count
end

local done = false
for epoch = 1, opt.epochs do
  local bar = T.Progress{total = steps_per_epoch, title = ('epoch %d/%d'):format(epoch, opt.epochs), mode = opt.progress}
  local order = T.data.epoch_order(train:size(), opt.seed, epoch, true)
  local loss, added, seen = 0, 0, 0
  for b = 1, steps_per_epoch do
    local first, count = T.parallel.share((b - 1) * opt.batch + 1, opt.batch)  -- MPI: our part
    local r = engine:step(train:batch(order, first, count))
    loss, added, seen = loss + r.loss * r.samples, added + (r.added_loss or 0) * r.samples, seen + r.samples
    bar:update(b, {loss = loss / seen}, r.samples)
    done = opt.max_steps > 0 and engine:steps() >= opt.max_steps
    if done then break end
  end
  local trained = bar:finish()
  local test_loss, accuracy = evaluate()
  print(('epoch %d: train loss %.4f (reconstruction %.4f of it) | test loss %.4f, accuracy %.2f%% | %.0f images/s')
        :format(epoch, trained.loss, added / seen, test_loss, 100 * accuracy, trained.images_per_s))
  if done then break end
end

-- What the attention looked at: for each class, the three rows it weighs most on average over
-- test images (the weights of the layer's last forward: group 1's last micro-batch; under
-- MPI, this rank's).
local order = T.data.epoch_order(test:size(), 0, 0, false)
engine:evaluate_batch(test:batch(order, 1, 1000))
local weights = attention:attention_weights()
local n = weights:shape()[1]
local group_end = math.floor(1000 / opt.groups)  -- group 1's share of the batch ends here
local _, labels = test:batch(order, group_end - n + 1, n)
weights = weights:to_flat()
local classes = labels:to_flat()
local mean, counts = {}, {}
for c = 0, 9 do mean[c], counts[c] = {}, 0 for r = 1, 28 do mean[c][r] = 0 end end
for i = 1, n do
  local c = classes[i]
  counts[c] = counts[c] + 1
  for r = 1, 28 do mean[c][r] = mean[c][r] + weights[(i - 1) * 28 + r] end
end
print('the rows (1 = top) the attention weighs most, by class:')
for c = 0, 9 do
  local ranked = {}
  for r = 1, 28 do ranked[r] = r end
  table.sort(ranked, function(a, b) return mean[c][a] > mean[c][b] end)
  print(('  class %d: rows %d, %d, %d (%.0f%% of the weight)'):format(c, ranked[1], ranked[2], ranked[3],
        100 * (mean[c][ranked[1]] + mean[c][ranked[2]] + mean[c][ranked[3]]) / math.max(counts[c], 1)))
end
T.parallel.finish(engine, opt)
