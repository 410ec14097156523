-- Tensors and devices from Lua: construction, round trips through tables, methods, freeing.
local T = require 'tandem'
local t = require 'tandem.test'

t.test('nested table round trip', function()
  local x = T.tensor{{1, 2, 3}, {4, 5, 6}}
  t.eq(x:shape(), {2, 3})
  t.eq(x:numel(), 6)
  t.eq(x:to_table(), {{1, 2, 3}, {4, 5, 6}})
  t.eq(x:to_flat(), {1, 2, 3, 4, 5, 6})
  t.eq(x:dtype(), 'f32')
  t.eq(x:layout(), 'contiguous')
  t.eq(x:device_name(), 'host')
end)

t.test('flat list with a shape', function()
  local x = T.tensor({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2})
  t.eq(x:to_table(), {{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}})
  t.eq(x:size(1), 2)
  t.eq(x:size(-1), 2)
  t.eq(x:size(), 8)
end)

t.test('float values keep float32 precision', function()
  local x = T.tensor{0.1, -2.5, 1e-3}
  t.near(x:to_flat(), {0.1, -2.5, 1e-3}, 1e-7)
end)

t.test('empty and rank-0 tensors', function()
  t.eq(T.tensor{}:shape(), {0})
  t.eq(T.tensor{}:to_table(), {})
  local s = T.tensor({7}, {})
  t.eq(s:shape(), {})
  t.eq(s:to_table(), 7)
end)

t.test('integer dtypes', function()
  local labels = T.tensor({3, 0, 9}, nil, {dtype = 'i32'})
  t.eq(labels:dtype(), 'i32')
  t.eq(labels:to_flat(), {3, 0, 9})
  local bytes = T.tensor({{0, 255}}, nil, {dtype = 'u8'})
  t.eq(bytes:to_table(), {{0, 255}})
  t.raises(function() T.tensor({256}, nil, {dtype = 'u8'}) end, 'does not fit U8')
  t.raises(function() T.tensor({1.5}, nil, {dtype = 'i32'}) end, 'does not fit I32')
  t.raises(function() T.tensor({1}, nil, {dtype = 'f64'}) end, "option 'dtype' must be")
  t.raises(function() T.tensor({1}, nil, {type = 'i32'}) end,
           "T.tensor: unknown option 'type' (known: dtype)")
end)

t.test('zeros, ones, randn', function()
  t.eq(T.zeros{2, 2}:to_table(), {{0, 0}, {0, 0}})
  t.eq(T.ones{3}:to_flat(), {1, 1, 1})
  local a, b, c = T.randn({1000}, 7), T.randn({1000}, 7), T.randn({1000}, 8)
  t.eq(a:to_flat(), b:to_flat(), 'same seed, same values')
  t.ok(a:to_flat()[1] ~= c:to_flat()[1], 'another seed, other values')
  local sum, squares = 0, 0
  for _, v in ipairs(a:to_flat()) do sum, squares = sum + v, squares + v * v end
  t.near(sum / 1000, 0, 0.15)
  t.near(squares / 1000, 1, 0.15)
end)

t.test('reshape shares the values', function()
  local x = T.tensor{1, 2, 3, 4, 5, 6}
  t.eq(x:reshape{3, 2}:to_table(), {{1, 2}, {3, 4}, {5, 6}})
  t.raises(function() x:reshape{4, 2} end, {'cannot reshape', '6 elements, 8 wanted'})
end)

t.test('tostring names shape, dtype and device', function()
  t.eq(tostring(T.zeros{8, 3, 32, 32}), 'Tensor(8x3x32x32, f32, host)')
  t.ok(T.is_tensor(T.zeros{1}))
  t.ok(not T.is_tensor({}))
end)

t.test('freed tensors are refused by every method', function()
  local x = T.zeros{2}
  x:free()
  x:free()  -- a second free does nothing
  t.eq(tostring(x), 'Tensor(freed)')
  for _, m in ipairs{'shape', 'numel', 'dtype', 'layout', 'device_name', 'to_table', 'to_flat',
                     'clone'} do
    t.raises(function() x[m](x) end, 'tensor was freed')
  end
  t.raises(function() x:size(1) end, 'tensor was freed')
  t.raises(function() x:reshape{2} end, 'tensor was freed')
  t.raises(function() T.nn.ReLU():forward(x) end, 'tensor was freed')
end)

t.test('devices', function()
  local d = T.devices('cpu', 2, {memory = '64MB', threads = 1})
  t.eq(#d, 2)
  t.eq(d[1]:name(), 'cpu:0')
  t.eq(d[2]:name(), 'cpu:1')
  t.eq(d[1]:kind(), 'cpu')
  t.eq(d[2]:index(), 1)
  t.eq(d[1]:threads(), 1)
  local m = d[1]:memory()
  t.eq(m.cap, 64 * 1024 * 1024)
  t.eq(m.in_use, 0)
  t.ok(T.is_device(d[1]))
  t.ok(tostring(d[1]):find('cpu:0', 1, true))
end)

t.test('tensors move to devices and count against their memory', function()
  local d = T.devices('cpu', 1, {memory = 1024 * 1024})[1]
  local x = T.tensor{{1, 2}, {3, 4}}:to(d)
  t.eq(x:device_name(), 'cpu:0')
  t.eq(x:to_table(), {{1, 2}, {3, 4}})
  t.ok(d:memory().in_use > 0)
  t.ok(d:memory().peak >= d:memory().in_use)
  t.raises(function() T.zeros{1024, 1024}:to(d) end,
           {'cpu:0 out of memory', 'requested 4.0 MiB', 'cap 1.0 MiB'})
  d = nil
  collectgarbage()
  t.eq(x:to_flat(), {1, 2, 3, 4}, 'the tensor keeps working after the device value is gone')
end)

t.test('device errors', function()
  t.raises(function() T.devices('gpu', 1) end, "unknown device kind 'gpu' (known: cpu, cuda)")
  local has_cuda = false
  for _, b in ipairs(T.backends) do has_cuda = has_cuda or b == 'cuda' end
  if not has_cuda then
    t.raises(function() T.devices('cuda', 1) end,
             {'no CUDA device', 'cuda is not compiled into this build'})
  else
    -- Compiled in: succeeds on a GPU machine, otherwise says no GPU or driver was found.
    local ok, err = pcall(T.devices, 'cuda', 'all')
    t.ok(ok or tostring(err):find('no CUDA device: the backend is compiled in, but no GPU', 1,
                                  true), tostring(err))
  end
  t.raises(function() T.devices('cuda', 'some') end, "device count must be a number or 'all'")
  t.raises(function() T.devices('cuda', 1, {threads = 2}) end,
           "T.devices: unknown option 'threads' (known: memory, workspace, benchmark, tf32)")
  t.raises(function() T.devices('cpu', 0) end, 'device count must be in [1, 256], got 0')
  t.raises(function() T.devices('cpu', 1.5) end, 'device count must be an integer in [1, 256], got 1.5')
  t.raises(function() T.devices('cpu') end, "bad argument #2 to 'devices'")
  t.raises(function() T.devices('cpu', 1, {memroy = '1GB'}) end,
           "T.devices: unknown option 'memroy' (known: memory, threads)")
  t.raises(function() T.devices('cpu', 1, {memory = 'lots'}) end, "cannot read a size from 'lots'")
  t.raises(function() T.devices('cpu', 1, {memory = true}) end, "option 'memory' must be a size")
  t.raises(function() T.devices('cpu', 1, {threads = 'two'}) end,
           "T.devices: option 'threads' must be an integer in [0, 1024] (0: every core), got 'two'")
  t.raises(function() T.devices('cpu', 1, 'fast') end, 'options table expected, got string')
  local d = T.devices('cpu', 1)[1]
  t.raises(function() d.name(T.zeros{1}) end, 'tandem.Device expected, got tandem.Tensor')
end)
