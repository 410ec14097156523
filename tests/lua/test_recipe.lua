-- The default recipe end to end on the real Fashion-MNIST, for a short budget: it trains,
-- its running loss falls, it evaluates, logs and checkpoints. (The full-accuracy run is a
-- benchmark: `make run`.)
local t = require 'tandem.test'
local S = dofile('tests/lua/support.lua')

local data = '/usr/share/datasets/fashion-mnist'

t.test('fashion_mnist.lua trains for 200 steps and its loss falls', function()
  local f = io.open(data .. '/train-images-idx3-ubyte.gz', 'rb')
  if not f then
    print('# skipped: ' .. data .. ' is missing (tools/install-deps installs dataset-fashion-mnist)')
    return
  end
  f:close()
  local dir = S.tmpname('_recipe')
  local out, rc = S.tandem({'run', 'recipes/fashion_mnist.lua', '--max_steps=200', '--epochs=1',
                            '--threads=2', '--checkpoints=' .. dir .. '/ck',
                            '--log=' .. dir .. '/metrics.jsonl'})
  t.eq(rc, 0, out)
  local losses = {}
  for loss in out:gmatch('loss (%d+%.%d+) ') do losses[#losses + 1] = tonumber(loss) end
  t.ok(#losses >= 3, 'progress lines with the running loss:\n' .. out)
  t.ok(losses[#losses] < 0.8 * losses[1],
       ('running loss %g at the first report, %g at the last'):format(losses[1], losses[#losses]))
  local accuracy = tonumber(out:match('test loss %d+%.%d+ acc (%d+%.%d+)'))
  t.ok(accuracy and accuracy > 0.7, 'test accuracy after 200 steps: ' .. tostring(accuracy))
  local log = S.read(dir .. '/metrics.jsonl')
  t.ok(log:find('"test_accuracy"', 1, true) and log:find('"step": 200', 1, true), log)
  -- bench/race.py's clock: since the data were read, so it holds the epoch's training seconds
  -- and the test after them.
  local elapsed = tonumber(log:match('"elapsed": ([%d.e+-]+)'))
  local seconds = tonumber(log:match('"seconds": ([%d.e+-]+)'))
  t.ok(elapsed and seconds and elapsed > seconds, log)
  t.ok(io.open(dir .. '/ck/epoch1.safetensors', 'rb'), 'checkpoint written')
  -- The run's curves, redrawn beside its log every epoch.
  local png = io.open(dir .. '/metrics.png', 'rb')
  t.ok(png and png:read(8) == '\137PNG\r\n\026\n', 'a PNG chart beside the log')
  if png then png:close() end
  os.execute('rm -rf ' .. S.quote(dir))
end)
