-- The recipes that read images through T.data.Loader, end to end on tiny budgets: the JPEG
-- folder recipe on a synthetic set, and the default recipe with --source=lmdb.
local t = require 'tandem.test'
local S = dofile('tests/lua/support.lua')

t.test('folder_jpeg.lua trains on a synthetic JPEG folder', function()
  local dir = S.tmpname('_jpeg')
  local out, rc = S.tandem({'run', 'recipes/folder_jpeg.lua', '--synthetic=' .. dir .. '/data',
                            '--classes=4', '--per_class=8', '--epochs=2', '--batch=8', '--size=32',
                            '--resize=36', '--threads=1', '--log=' .. dir .. '/metrics.jsonl'})
  t.eq(rc, 0, out)
  t.ok(out:find('epoch 2: train loss %d+%.%d+ acc [%d.]+ | val loss [%d.]+ acc [%d.]+') ~= nil, out)
  t.ok(out:find('| data [%d.]+%%') ~= nil, 'progress shows the data wait:\n' .. out)
  local log = S.read(dir .. '/metrics.jsonl')
  t.ok(log:find('"data_wait"', 1, true) and log:find('"decode_rate"', 1, true), log)
  os.execute('rm -rf ' .. S.quote(dir))
end)

t.test('fashion_mnist.lua --source=lmdb trains through the loader', function()
  local data = '/usr/share/datasets/fashion-mnist'
  local f = io.open(data .. '/train-images-idx3-ubyte.gz', 'rb')
  if not f then
    print('# skipped: ' .. data .. ' is missing (tools/install-deps installs dataset-fashion-mnist)')
    return
  end
  f:close()
  local dir = S.tmpname('_fmlmdb')
  local out, rc = S.tandem({'run', 'recipes/fashion_mnist.lua', '--source=lmdb',
                            '--lmdb=' .. dir .. '/train_lmdb', '--max_steps=15', '--epochs=1',
                            '--threads=2', '--eval_batch=2000', '--checkpoints=' .. dir .. '/ck',
                            '--log=' .. dir .. '/metrics.jsonl'})
  t.eq(rc, 0, out)
  t.ok(out:find('wrote 60000 records', 1, true), 'the database is made on first use:\n' .. out)
  local accuracy = tonumber(out:match('test loss %d+%.%d+ acc (%d+%.%d+)'))
  t.ok(accuracy and accuracy > 0.3, 'test accuracy after 15 steps: ' .. tostring(accuracy))
  t.ok(out:find('data wait [%d.]+%%') ~= nil, out)
  t.ok(S.read(dir .. '/metrics.jsonl'):find('"data_wait"', 1, true), 'logged')
  os.execute('rm -rf ' .. S.quote(dir))
end)
