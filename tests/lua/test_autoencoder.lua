-- recipes/autoencoder.lua end to end on the real Fashion-MNIST, briefly: on one device its
-- loss falls and the test reconstruction error is reported; as a 2-stage pipeline with
-- recomputation it trains too; it writes the PNG grid of images and reconstructions.
local t = require 'tandem.test'
local S = dofile('tests/lua/support.lua')

local function run(args)
  local dir = S.tmpname('_autoencoder')
  local command = {'run', 'recipes/autoencoder.lua', '--epochs=1', '--progress=plain', '--threads=1',
                   '--grid=' .. dir .. '/grid.png'}
  for _, a in ipairs(args) do command[#command + 1] = a end
  local out, rc = S.tandem(command)
  t.eq(rc, 0, out)
  local png = io.open(dir .. '/grid.png', 'rb')
  t.ok(png and png:read(8) == '\137PNG\r\n\026\n', 'the grid is a PNG:\n' .. out)
  if png then png:close() end
  os.execute('rm -rf ' .. S.quote(dir))
  return out
end

t.test('autoencoder.lua learns to reconstruct, on one device and as a recomputing pipeline', function()
  if not S.have_fashion_mnist() then return end
  local out = run{'--max_steps=150'}
  local losses = {}
  for loss in out:gmatch('loss (%d+%.%d+) ') do losses[#losses + 1] = tonumber(loss) end
  t.ok(#losses >= 2 and losses[#losses] < 0.8 * losses[1], 'running loss falls:\n' .. out)
  local error = tonumber(out:match('test reconstruction error (%d+%.%d+) per pixel'))
  -- The pixels' variance is about 0.12 (std 0.353): the net must do far better than a constant.
  t.ok(error and error < 0.05, 'test reconstruction error after 150 steps: ' .. tostring(error))
  local piped = run{'--max_steps=30', '--devices=2', '--stages=2', '--micro-batches=4', '--recompute=true',
                    '--activation=gelu'}
  t.ok(piped:find('stage 2: fc5 .. sigmoid1 on cpu:1', 1, true), piped)
  t.ok(piped:match('test reconstruction error %d+%.%d+ per pixel'), piped)
end)
