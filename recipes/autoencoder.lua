-- The deep autoencoder of the third seed (784-1000-500-250-30 and back, as Hinton and
-- Salakhutdinov's) on Fashion-MNIST, unsupervised: the images are their own targets (MSE on
-- the sigmoid's [0, 1] pixels), trained with Adam; every parallel option applies, activation
-- recomputation (--recompute=true) included. Each epoch prints the test reconstruction error
-- (mean squared error per pixel); at the end a PNG grid shows test images (odd rows) above
-- their reconstructions (even rows).
--   tandem run recipes/autoencoder.lua --epochs=5 --code=30 --activation=relu
local T = require 'tandem'
local nn = T.nn

local opt = T.options(..., T.parallel.defaults{
  data = {'/usr/share/datasets/fashion-mnist', 'the folder of the Fashion-MNIST idx files', kind = 'dir'},
  epochs = {5, 'passes over the training set', kind = 'positive_int'},
  batch = {128, 'images a step (the global batch, shared by the groups)', kind = 'positive_int'},
  lr = {1e-3, "Adam's learning rate", kind = 'positive_number'},
  code = {30, 'the width of the code layer in the middle', kind = 'positive_int'},
  activation = {'relu', 'the hidden layers\' activation', choices = {'relu', 'gelu', 'tanh', 'sigmoid'}},
  seed = {1, 'the seed of the weights and the data order', kind = 'nonneg_int'},
  max_steps = {0, 'stop after this many steps (0: run every epoch)', kind = 'nonneg_int'},
  eval_batch = {1000, 'images a step when testing', kind = 'positive_int'},
  grid = {'logs/autoencoder.png', 'the PNG of test images above their reconstructions'},
  progress = T.Progress.option,
})

local train = T.data.mnist_split(opt.data, 'train')
local test = T.data.mnist_split(opt.data, 't10k')
local sample_shape = {1, 28, 28}
local pixels = 28 * 28

local activation = ({relu = nn.ReLU, gelu = nn.GELU, tanh = nn.Tanh, sigmoid = nn.Sigmoid})[opt.activation]
local layers = {nn.Flatten()}
local widths = {pixels, 1000, 500, 250, opt.code, 250, 500, 1000, pixels}
for i = 1, #widths - 1 do
  layers[#layers + 1] = nn.Linear(widths[i], widths[i + 1])
  -- The code layer is linear (the seed's); the output is a pixel in [0, 1].
  if i == #widths - 1 then
    layers[#layers + 1] = nn.Sigmoid()
  elseif widths[i + 1] ~= opt.code then
    layers[#layers + 1] = activation()
  end
end
local net = nn.Sequential(layers)

local steps_per_epoch = T.mpi.all_reduce({math.floor(train:size() / opt.batch)}, 'min')[1]
local devices, parallel = T.parallel.layout(opt, net, sample_shape)
local engine = T.Engine{net = net, loss = nn.MSE(), devices = devices, parallel = parallel,
                        optim = T.optim.Adam{lr = opt.lr}, seed = opt.seed, trace = opt.trace ~= '',
                        precision = opt.precision, loss_scale = opt.loss_scale,
                        initial_loss_scale = opt.initial_loss_scale}
print(net:summary(sample_shape))
T.parallel.describe(engine, opt, sample_shape)

-- The images' own pixels, one row per image: the targets.
local function flat(images) return images:reshape{images:shape()[1], pixels} end

local function test_error()
  local order = T.data.epoch_order(test:size(), 0, 0, false)
  local sum, count = 0, 0
  for first = 1, test:size(), opt.eval_batch do
    local images = test:batch(order, first, math.min(opt.eval_batch, test:size() - first + 1))
    local s = engine:evaluate_batch(images, flat(images))
    sum, count = sum + s.loss, count + s.count
  end
  return sum / count
end

for epoch = 1, opt.epochs do
  local bar = T.Progress{total = steps_per_epoch, title = ('epoch %d/%d'):format(epoch, opt.epochs),
                         mode = opt.progress}
  local order = T.data.epoch_order(train:size(), opt.seed, epoch, true)
  local loss, seen = 0, 0
  for b = 1, steps_per_epoch do
    local first, count = T.parallel.share((b - 1) * opt.batch + 1, opt.batch)  -- MPI: our part
    local images = train:batch(order, first, count)
    local r = engine:step(images, flat(images))
    loss, seen = loss + r.loss * r.samples, seen + r.samples
    bar:update(b, {loss = loss / seen}, r.samples)
    if opt.max_steps > 0 and engine:steps() >= opt.max_steps then break end
  end
  local trained = bar:finish()
  print(('epoch %d: train MSE %.5f | test reconstruction error %.5f per pixel | %.0f images/s')
        :format(epoch, trained.loss, test_error(), trained.images_per_s) .. T.parallel.loss_scale_text(engine))
  if opt.max_steps > 0 and engine:steps() >= opt.max_steps then break end
end

-- Eight test images above their reconstructions, twice: four rows of eight.
local order = T.data.epoch_order(test:size(), 0, 0, false)
local images = test:batch(order, 1, 16)
local reconstructed = engine:net():forward(images):to_flat()
local originals, grid = images:to_flat(), {}
for block = 0, 1 do
  for _, source in ipairs{originals, reconstructed} do
    for i = block * 8 * pixels + 1, (block + 1) * 8 * pixels do grid[#grid + 1] = source[i] end
  end
end
T.save_image_grid(opt.grid, T.tensor(grid, {32, 1, 28, 28}), {columns = 8})
print('wrote ' .. opt.grid .. ' (test images above their reconstructions)')
T.parallel.finish(engine, opt)
