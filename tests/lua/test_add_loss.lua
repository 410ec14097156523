-- nn.AddLoss (issue 18): several losses with weights in one step. An autoencoder's
-- reconstruction beside a classifier trains alike on one device, with its branches placed on
-- devices of their own, with groups and with micro-batches; the step reports the added term.
local t = require 'tandem.test'
local T = require 'tandem'
local nn = T.nn
local S = dofile('tests/lua/support.lua')
local batch = S.toy_batch

-- The image's 64 pixels -> a code of 8 -> the pixels again (0.5 x MSE), and the code -> 3 classes.
local function net(weight)
  local g = nn.Graph{name = 'g'}
  local x = g:input('x')
  local flat = g:add(nn.Flatten(), x)
  local code = g:add(nn.Linear(64, 8, {name = 'enc'}), flat)
  local recon = g:add(nn.Linear(8, 64, {name = 'dec'}), code)
  local tied = g:add(nn.AddLoss(nn.MSE(), {weight = weight or 0.5, name = 'recon'}), code, recon, flat)
  g:output(g:add(nn.Linear(8, 3, {name = 'head'}), tied))
  return nn.Sequential{g}
end

local placement = {{'g.flatten1', 'g.enc'}, {'g.dec', 'g.recon'}, {'g.head'}}

local function engine(parallel, devices, weight)
  return T.Engine{net = net(weight), devices = T.devices('cpu', devices, {threads = 1}),
                  optim = T.optim.SGD{lr = 0.05, momentum = 0.9}, seed = 4, parallel = parallel}
end

local function train(e)
  local added = {}
  for step = 1, 4 do added[step] = e:step(batch(16, step)).added_loss end
  return S.weights(e), added
end

t.test('the added term trains alike on one device, placed, with groups and micro-batches', function()
  local untrained = S.weights(engine({}, 1))
  local one, added = train(engine({}, 1))
  for step = 1, 4 do t.ok(added[step] > 0, 'the step reports its reconstruction term') end
  -- Only the term reaches the decoder.
  t.ok(one['g.dec.weight'][1] ~= untrained['g.dec.weight'][1], 'the decoder trains')
  local _, none = train(engine({}, 1, 0))
  t.eq(none[1], nil, 'a weight of 0 adds nothing')
  for _, case in ipairs{{{placement = placement}, 3, 'placed'},
                        {{groups = 2, micro_batches = 2, pipeline = '1f1b', placement = placement}, 6, 'groups'},
                        {{micro_batches = 4}, 1, 'micro-batches'}} do
    local weights, terms = train(engine(case[1], case[2]))
    t.near(weights, one, 1e-5, case[3])
    for step = 1, 4 do t.near(terms[step], added[step], 1e-5 * added[step], case[3]) end
  end
end)

t.test('evaluation counts the added term', function()
  local images, labels = batch(16, 7)
  local with = engine({placement = placement}, 3):evaluate_batch(images, labels)
  t.near(with.loss, engine({}, 1):evaluate_batch(images, labels).loss, 1e-5 * with.loss, 'placed and one device')
  local without = engine({}, 1, 0):evaluate_batch(images, labels)
  t.ok(with.loss > without.loss, ('%.4f with the term, %.4f without'):format(with.loss, without.loss))
  t.eq(with.count, 16)
end)

t.test('nn.AddLoss refuses what it cannot add', function()
  t.raises(function() nn.AddLoss(nn.CrossEntropy()) end, 'compares outputs with class labels')
  t.raises(function() nn.AddLoss(nn.MSE(), {weight = -1}) end, 'the weight must be a finite number at least 0')
  t.raises(function() nn.AddLoss(5) end, 'nn.AddLoss')
  local g = nn.Graph{}
  local x = g:input('x')
  local a = g:add(nn.Linear(4, 2), x)
  t.raises(function() g:add(nn.AddLoss(nn.MSE()), a, x) end, 'AddLoss takes 3 inputs, got 2')
end)
