-- T.save / T.load round trips and their failure modes.
local T = require 'tandem'
local t = require 'tandem.test'
local S = dofile('tests/lua/support.lua')

t.test('tensors and metadata round trip', function()
  local path = S.tmpname('.safetensors')
  local w = T.randn({3, 4}, 1)
  local labels = T.tensor({1, 2, 3}, nil, {dtype = 'i32'})
  local bytes = T.tensor({0, 7, 255}, nil, {dtype = 'u8'})
  local saved = T.save(path, {w = w, labels = labels, bytes = bytes},
                      {epoch = 3, note = 'hi', best = true})
  t.eq(saved, true)
  local tensors, meta = T.load(path)
  t.eq(tensors.w:shape(), {3, 4})
  t.eq(tensors.w:to_flat(), w:to_flat())
  t.eq(tensors.labels:dtype(), 'i32')
  t.eq(tensors.labels:to_flat(), {1, 2, 3})
  t.eq(tensors.bytes:to_flat(), {0, 7, 255})
  t.eq(meta, {epoch = '3', note = 'hi', best = 'true'})
  S.cleanup()
end)

t.test('a net\'s parameters round trip', function()
  local path = S.tmpname('.safetensors')
  local net = T.nn.Sequential{T.nn.Conv2d(1, 2, 3), T.nn.Flatten(), T.nn.Linear(2, 2)}
  net:initialize(11)
  T.save(path, net:parameters())
  local copy = T.nn.Sequential{T.nn.Conv2d(1, 2, 3), T.nn.Flatten(), T.nn.Linear(2, 2)}
  copy:initialize(12)
  local loaded = assert(T.load(path))
  for name, p in pairs(copy:parameters()) do p:copy(loaded[name]) end
  for name, p in pairs(net:parameters()) do
    t.eq(copy:parameters()[name]:to_flat(), p:to_flat(), name)
  end
  S.cleanup()
end)

t.test('load onto a device', function()
  local path = S.tmpname('.safetensors')
  T.save(path, {x = T.ones{2}})
  local d = T.devices('cpu', 1, {memory = '1MB'})[1]
  local tensors = T.load(path, d)
  t.eq(tensors.x:device_name(), 'cpu:0')
  t.raises(function() T.load(path, 'cpu') end, "bad argument #2 to 'load' (tandem.Device expected")
  S.cleanup()
end)

t.test('a missing file is nil and a message; a bad one raises', function()
  local tensors, message = T.load('/nonexistent/checkpoint.safetensors')
  t.eq(tensors, nil)
  t.eq(message, '/nonexistent/checkpoint.safetensors: no such file')
  local path = S.tmpname('.safetensors')
  S.write(path, 'not a checkpoint at all')
  t.raises(function() T.load(path) end, path)
  t.raises(function() T.save('/nonexistent/dir/x.safetensors', {x = T.ones{1}}) end,
           '/nonexistent/dir/x.safetensors')
  local freed = T.ones{1}
  freed:free()
  t.raises(function() T.save(path, {x = freed}) end, "entry 'x': tensor was freed")
  t.raises(function() T.save(path, {__metadata__ = T.ones{1}}) end, '__metadata__')
  S.cleanup()
end)
