-- idx files, in-memory data sets, batches and epoch orders.
local T = require 'tandem'
local t = require 'tandem.test'
local S = dofile('tests/lua/support.lua')

-- An uncompressed idx file of unsigned bytes with the given dims and values.
local function idx_file(dims, values)
  local parts = {string.char(0, 0, 8, #dims)}
  for _, d in ipairs(dims) do
    parts[#parts + 1] = string.char(math.floor(d / 16777216) % 256, math.floor(d / 65536) % 256,
                                    math.floor(d / 256) % 256, d % 256)
  end
  for _, v in ipairs(values) do parts[#parts + 1] = string.char(v) end
  local path = S.tmpname('.idx')
  S.write(path, table.concat(parts))
  return path
end

-- 4 images of 2x3 pixels: image k has pixel values 10k + 0..5; labels 3, 1, 0, 1.
local function small_set()
  local pixels = {}
  for k = 0, 3 do
    for p = 0, 5 do pixels[#pixels + 1] = 10 * k + p end
  end
  return idx_file({4, 2, 3}, pixels), idx_file({4}, {3, 1, 0, 1})
end

t.test('idx files read as tensors', function()
  local images = small_set()
  local x = assert(T.data.idx(images))
  t.eq(x:shape(), {4, 2, 3})
  t.eq(x:to_table()[2], {{10, 11, 12}, {13, 14, 15}})
  S.cleanup()
end)

t.test('mnist-style data set', function()
  local images, labels = small_set()
  local ds = assert(T.data.mnist(images, labels, {mean = 0.5, std = 0.25}))
  t.eq(ds:size(), 4)
  t.eq(ds:classes(), 4)
  t.eq(ds:sample_shape(), {1, 2, 3})
  t.ok(tostring(ds):find('4 samples of 1x2x3', 1, true), tostring(ds))
  local x, y = ds:batch{2, 4}
  t.eq(x:shape(), {2, 1, 2, 3})
  t.eq(y:dtype(), 'i32')
  t.eq(y:to_flat(), {1, 1})
  t.near(x:to_flat()[1], (10 / 255 - 0.5) / 0.25, 1e-5)
  t.near(x:to_flat()[7], (30 / 255 - 0.5) / 0.25, 1e-5)
  local _, y2 = ds:batch({4, 3, 2, 1}, 2, 2)
  t.eq(y2:to_flat(), {0, 1}, 'indices[2..3]')
  local empty = ds:batch({1}, 2)
  t.eq(empty:shape(), {0, 1, 2, 3})
  S.cleanup()
end)

t.test('batches augment reproducibly', function()
  -- 64 images of one row [1, 2]: a flip makes it [2, 1].
  local values, labels, order = {}, {}, {}
  for i = 1, 64 do
    values[2 * i - 1], values[2 * i], labels[i], order[i] = 1, 2, 0, i
  end
  local ds = T.data.dataset(T.tensor(values, {64, 1, 1, 2}), T.tensor(labels, nil, {dtype = 'i32'}))
  local a = ds:batch(order, 1, 64, {flip = true}, 1, 1):to_flat()
  t.eq(ds:batch(order, 1, 64, {flip = true}, 1, 1):to_flat(), a, 'same seed and epoch')
  local flipped = 0
  for i = 1, 64 do
    local row = a[2 * i - 1] .. ',' .. a[2 * i]
    t.ok(row == '1,2' or row == '2,1', row)
    if row == '2,1' then flipped = flipped + 1 end
  end
  t.ok(flipped > 12 and flipped < 52, 'about half flipped: ' .. flipped)
  t.ok(table.concat(ds:batch(order, 1, 64, {flip = true}, 1, 2):to_flat(), ',') ~=
       table.concat(a, ','), 'another epoch, other flips')
  t.eq(ds:batch(order):to_flat()[2], 2, 'no augmentation without the table')
  t.raises(function() ds:batch({1}, 1, 1, {flip = true, rotate = 1}) end,
           "batch: unknown option 'rotate' (known: flip, crop_pad, fill)")
end)

t.test('batch checks its indices', function()
  local images, labels = small_set()
  local ds = T.data.mnist(images, labels)
  t.raises(function() ds:batch{0} end, 'entry 1 is not a sample index in [1, 4]')
  t.raises(function() ds:batch{5} end, 'not a sample index')
  t.raises(function() ds:batch{1.5} end, 'not a sample index')
  t.raises(function() ds:batch{'1'} end, 'not a sample index')
  t.raises(function() ds:batch(1) end, 'list of sample indices expected, got number')
  t.raises(function() ds:batch({1, 2}, 3, 1) end, 'count must be in [0, 0], got 1')
  t.raises(function() ds:batch({1, 2}, 0) end, 'first must be in [1, 3], got 0')
  t.raises(function() ds.size(T.zeros{1}) end, 'tandem.Dataset expected, got tandem.Tensor')
  S.cleanup()
end)

t.test('data sets from tensors', function()
  local x = T.tensor({1, 2, 3, 4}, {2, 1, 1, 2})
  local ds = T.data.dataset(x, T.tensor({0, 1}, nil, {dtype = 'i32'}))
  t.eq(ds:classes(), 2)
  local images = ds:batch{2}
  t.eq(images:to_flat(), {3, 4})
  t.raises(function() T.data.dataset(x, T.tensor({0, 1, 1}, nil, {dtype = 'i32'})) end,
           'dataset with 2 images')
end)

t.test('epoch order', function()
  local a = T.data.epoch_order(10, 1, 1)
  local seen = {}
  for _, i in ipairs(a) do seen[i] = true end
  for i = 1, 10 do t.ok(seen[i], 'index ' .. i) end
  t.eq(#a, 10)
  t.eq(T.data.epoch_order(10, 1, 1), a, 'same seed and epoch, same order')
  t.ok(table.concat(T.data.epoch_order(10, 1, 2), ',') ~= table.concat(a, ','), 'another epoch')
  t.eq(T.data.epoch_order(4, 1, 1, false), {1, 2, 3, 4})
end)

t.test('missing files give nil and a message; malformed ones raise', function()
  local x, message = T.data.idx('/nonexistent/images.idx')
  t.eq(x, nil)
  t.eq(message, '/nonexistent/images.idx: no such file')
  local images = small_set()
  local ds, why = T.data.mnist(images, '/nonexistent/labels.idx')
  t.eq(ds, nil)
  t.eq(why, '/nonexistent/labels.idx: no such file')
  local bad = S.tmpname('.idx')
  S.write(bad, 'garbage!')
  t.raises(function() T.data.idx(bad) end, bad)
  local _, labels = small_set()
  local wrong = idx_file({3}, {1, 2, 3})
  t.raises(function() T.data.mnist(images, wrong) end, 'holds 4 images but')
  t.raises(function() T.data.mnist(images, labels, {std = 0}) end, "T.data.mnist: option 'std' must be a finite number > 0, got 0")
  S.cleanup()
end)

t.test('Fashion-MNIST from the system, when installed', function()
  local dir = '/usr/share/datasets/fashion-mnist'
  local ds = T.data.mnist(dir .. '/t10k-images-idx3-ubyte.gz', dir .. '/t10k-labels-idx1-ubyte.gz')
  if ds == nil then
    print('# skipped: ' .. dir .. ' is not installed')
    return
  end
  t.eq(ds:size(), 10000)
  t.eq(ds:classes(), 10)
  t.eq(ds:sample_shape(), {1, 28, 28})
end)
