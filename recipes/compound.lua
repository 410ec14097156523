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
--
-- Users' own interaction data (docs/data-format.md, "Interaction data": user, item sequence,
-- features, label a line) trains the same model over item sequences and sparse features:
--   tandem gen-interactions users.tsv --users=5000
--   tandem import-interactions users.tsv users_db --length=12     (or read users.tsv directly)
--   tandem run recipes/compound.lua --interactions=users_db --epochs=5
-- --interactions holds the examples in memory. A database too large for that is streamed by
-- T.data.Loader (read, copied into batches and shuffled on its threads) with --interactions_db,
-- testing on held-out examples of their own:
--   tandem gen-interactions test.tsv --users=500 --seed=2
--   tandem run recipes/compound.lua --interactions_db=users_db --interactions_test=test.tsv
local T = require 'tandem'
local usage_error = require('tandem.command_line').usage_error

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
  interactions = {'', "users' interaction data, a text file or an LMDB database from `tandem "
                      .. "import-interactions` (docs/data-format.md), instead of Fashion-MNIST"},
  interactions_db = {'', "an LMDB database of interaction records to train on, streamed by T.data.Loader "
                         .. "rather than held in memory (needs --interactions_test)"},
  interactions_test = {'', "held-out interaction data ('': every tenth example of --interactions)"},
  data_threads = {2, '--interactions_db: the loader\'s threads', kind = 'positive_int'},
  length = {0, 'interactions: items a sample keeps (0: the longest sequence, or the database\'s)', kind = 'nonneg_int'},
  features = {0, 'interactions: the feature width (0: the largest index + 1, or the database\'s)', kind = 'nonneg_int'},
})

-- The data: Fashion-MNIST by default; with --interactions, users' examples and the shape of
-- their samples ({length =, features =, items =, classes =}).
local train, test, shape
local streamed = opt.interactions_db ~= ''  -- train is then a T.data.Loader
if opt.interactions ~= '' and streamed then usage_error('give --interactions or --interactions_db, not both') end
if opt.interactions == '' and not streamed then
  train, test = T.data.mnist_split(opt.data, 'train'), T.data.mnist_split(opt.data, 't10k')
else
  local function read(path, asked)
    local data, info = T.data.interactions(path, asked)
    if not data then usage_error(('--interactions: %s'):format(info)) end
    return data, info
  end
  local all
  if streamed then
    local db = opt.interactions_db
    local f = io.open(db .. '/data.mdb', 'rb')
    if not f then
      usage_error(('--interactions_db=%s is not an LMDB database (a folder holding data.mdb): convert a text file with '
                   .. '`tandem import-interactions`, or give it as --interactions'):format(db))
    end
    f:close()
    if opt.interactions_test == '' then
      usage_error('--interactions_db streams the whole database for training: give held-out examples as '
                  .. '--interactions_test=PATH (a text file or database)')
    end
    -- The shape and item ids in one pass that keeps nothing; the loader reads the records again.
    shape = T.data.interactions_info(db, {length = opt.length, features = opt.features})
    train = T.data.Loader{
      source = assert(T.data.lmdb(db)), threads = opt.data_threads, seed = opt.seed,
      batch = select(2, T.parallel.share(1, opt.batch)),  -- under MPI: this rank's part
      shard = {index = T.mpi.rank() + 1, count = T.mpi.size()},  -- under MPI: each rank its shard
    }
  else
    all, shape = read(opt.interactions, {length = opt.length, features = opt.features})
  end
  if opt.interactions_test ~= '' then
    local test_shape
    train = train or all
    test, test_shape = read(opt.interactions_test, {length = shape.length, features = shape.features})
    -- Ids only the test set holds still need rows of the embedding.
    shape.items, shape.classes = math.max(shape.items, test_shape.items), math.max(shape.classes, test_shape.classes)
  else
    -- Every tenth example held out, the same ones on every run.
    local kept, held = {}, {}
    for i = 1, all:size() do table.insert(i % 10 == 0 and held or kept, i) end
    if #held == 0 then usage_error(('--interactions=%s: %d examples, too few to hold a tenth out (give --interactions_test)')
                                   :format(opt.interactions, all:size())) end
    train, test = T.data.dataset(all:batch(kept)), T.data.dataset(all:batch(held))
  end
  -- Each sub-model on a device of its own, by the interaction net's node names, unless the
  -- command line placed them itself.
  if opt.placement == table.concat(stages, '/') then
    local _, _, placed = compound{interactions = shape}
    local texts = {}
    for s, names in ipairs(placed.placement) do texts[s] = table.concat(names, ',') end
    opt.placement = table.concat(texts, '/')
  end
  print(('interactions: %d examples to train on%s, %d to test; %d items then %d features a sample, %d item ids, %d classes')
        :format(streamed and shape.size or train:size(), streamed and ' (streamed: ' .. tostring(train) .. ')' or '',
                test:size(), shape.length, shape.features, shape.items, shape.classes))
end

local net, sample_shape, built = compound{hidden = opt.hidden, code = opt.code, reconstruction = opt.reconstruction,
                                          interactions = shape, classes = shape and shape.classes}
local attention = built.attention

-- Under MPI a loader's shards may differ by a batch: all stop at the shortest.
local steps_per_epoch = T.mpi.all_reduce({streamed and train:batches_per_epoch()
                                          or math.floor(train:size() / opt.batch)}, 'min')[1]
local devices, parallel = T.parallel.layout(opt, net, sample_shape)
local engine = T.Engine{net = net, devices = devices, parallel = parallel, optim = T.optim.Adam{lr = opt.lr},
                        seed = opt.seed, trace = opt.trace ~= '', precision = opt.precision,
                        loss_scale = opt.loss_scale, initial_loss_scale = opt.initial_loss_scale}
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
  local order = not streamed and T.data.epoch_order(train:size(), opt.seed, epoch, true)
  if streamed then train:start(epoch) end
  local loss, added, seen = 0, 0, 0
  for b = 1, steps_per_epoch do
    local r
    if streamed then
      local samples, labels = train:next()
      if not samples then error(('%s ended its epoch after %d batches'):format(tostring(train), b - 1)) end
      r = engine:step(samples, labels)
    else
      local first, count = T.parallel.share((b - 1) * opt.batch + 1, opt.batch)  -- MPI: our part
      r = engine:step(train:batch(order, first, count))
    end
    loss, added, seen = loss + r.loss * r.samples, added + (r.added_loss or 0) * r.samples, seen + r.samples
    bar:update(b, {loss = loss / seen}, r.samples)
    done = opt.max_steps > 0 and engine:steps() >= opt.max_steps
    if done then break end
  end
  local trained = bar:finish()
  local test_loss, accuracy = evaluate()
  print(('epoch %d: train loss %.4f (reconstruction %.4f of it) | test loss %.4f, accuracy %.2f%% | %.0f images/s')
        :format(epoch, trained.loss, added / seen, test_loss, 100 * accuracy, trained.images_per_s)
        .. T.parallel.loss_scale_text(engine))
  if done then break end
end

-- What the attention looked at: for each class, the three rows (or sequence positions) it
-- weighs most on average over test samples (the weights of the layer's last forward: group 1's
-- last micro-batch; under MPI, this rank's).
local looked = math.min(1000, test:size())
local order = T.data.epoch_order(test:size(), 0, 0, false)
engine:evaluate_batch(test:batch(order, 1, looked))
local weights = attention:attention_weights()
local n, steps = weights:shape()[1], weights:shape()[3]
local group_end = math.floor(looked / opt.groups)  -- group 1's share of the batch ends here
local _, labels = test:batch(order, group_end - n + 1, n)
weights = weights:to_flat()
local classes = labels:to_flat()
local class_count = shape and shape.classes or 10
local mean, counts = {}, {}
for c = 0, class_count - 1 do mean[c], counts[c] = {}, 0 for r = 1, steps do mean[c][r] = 0 end end
for i = 1, n do
  local c = classes[i]
  counts[c] = counts[c] + 1
  for r = 1, steps do mean[c][r] = mean[c][r] + weights[(i - 1) * steps + r] end
end
local what = shape and 'positions' or 'rows'
print(shape and ('the sequence positions (%d = the newest item) the attention weighs most, by class:'):format(steps)
      or 'the rows (1 = top) the attention weighs most, by class:')
for c = 0, class_count - 1 do
  local ranked = {}
  for r = 1, steps do ranked[r] = r end
  table.sort(ranked, function(a, b) return mean[c][a] > mean[c][b] end)
  local top, share = {}, 0
  for k = 1, math.min(3, steps) do top[k], share = ranked[k], share + mean[c][ranked[k]] end
  print(('  class %d: %s %s (%.0f%% of the weight)'):format(c, what, table.concat(top, ', '),
        100 * share / math.max(counts[c], 1)))
end
T.parallel.finish(engine, opt)
