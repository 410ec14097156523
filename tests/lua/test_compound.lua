-- recipes/compound.lua end to end on the real Fashion-MNIST, briefly: the seed's compound model
-- (LSTM, autoencoder, attention, head) on three devices, one sub-model each, learns; it trains
-- the same as on one device; it reports the reconstruction term and what the attention weighs.
local t = require 'tandem.test'
local S = dofile('tests/lua/support.lua')

local function run(args)
  local command = {'run', 'recipes/compound.lua', '--epochs=1', '--progress=plain', '--threads=1', '--max_steps=40',
                   '--eval_batch=1000'}
  for _, a in ipairs(args) do command[#command + 1] = a end
  local out, rc = S.tandem(command)
  t.eq(rc, 0, out)
  return out
end

local function figures(out)
  local loss, reconstruction, accuracy =
    out:match('train loss (%d+%.%d+) %(reconstruction (%d+%.%d+) of it%) | test loss %d+%.%d+, accuracy (%d+%.%d+)%%')
  return tonumber(loss), tonumber(reconstruction), tonumber(accuracy)
end

t.test('compound.lua trains its sub-models on devices of their own, as on one', function()
  if not S.have_fashion_mnist() then return end
  local placed = run{}
  t.ok(placed:find('stage 1: compound.rows .. compound.lstm on cpu:0', 1, true), placed)
  t.ok(placed:find('stage 3: compound.query .. compound.logits on cpu:2', 1, true), placed)
  local loss, reconstruction, accuracy = figures(placed)
  t.ok(loss and reconstruction > 0 and reconstruction < loss, 'the reconstruction term is part of the loss:\n' .. placed)
  t.ok(accuracy > 30, ('above chance (10%%) after 40 steps: %s%%'):format(tostring(accuracy)))
  t.ok(placed:find('class 9: rows %d+, %d+, %d+'), 'what the attention weighs, by class:\n' .. placed)
  local one = run{'--placement='}
  local one_loss, one_reconstruction, one_accuracy = figures(one)
  t.near(one_loss, loss, 1e-3, 'one device: the same training loss')
  t.near(one_reconstruction, reconstruction, 1e-3)
  t.near(one_accuracy, accuracy, 0.05)
end)
