-- The image pipeline from Lua: sources (folder, LMDB, list), T.data.Loader, and the data tools
-- (gen-images, mkdb, import-idx, mean, dbinfo) run as commands.
local T = require 'tandem'
local t = require 'tandem.test'
local S = dofile('tests/lua/support.lua')

local dir = S.tmpname('_loader')
os.execute('mkdir -p ' .. S.quote(dir))
local function run(args)
  local out, rc = S.tandem(args)
  t.eq(rc, 0, table.concat(args, ' ') .. ':\n' .. out)
  return out
end

-- 3 classes x 6 PNG images (lossless, so folder and database must agree exactly).
local folder = dir .. '/png'
run{'gen-images', folder, '--classes=3', '--per-class=6', '--min-size=24', '--max-size=40',
    '--format=png'}

t.test('folder source', function()
  local src = assert(T.data.folder(folder))
  t.eq(src:size(), 18)
  t.eq(src:classes(), 3)
  t.eq(src:class_names(), {'class_000', 'class_001', 'class_002'})
  t.eq(src:label(7), 1)
  t.ok(src:key(1):find('class_000/00000.png', 1, true), src:key(1))
  t.ok(tostring(src):find('18 images, 3 classes', 1, true), tostring(src))
  local none, message = T.data.folder(dir .. '/nowhere')
  t.eq(none, nil)
  t.ok(message:find('no such file or directory', 1, true), message)
  t.raises(function() src:label(19) end, 'sample must be in [1, 18], got 19')
end)

t.test('engine:evaluate takes a Loader (one epoch of what it yields) or a data set, nothing else', function()
  local nn = T.nn
  local net = nn.Sequential{nn.Conv2d(3, 4, 3, {pad = 1}), nn.ReLU(), nn.GlobalAvgPool2d(), nn.Flatten(),
                            nn.Linear(4, 3)}
  local engine = T.Engine{net = net, optim = T.optim.SGD{lr = 0.1}, devices = T.devices('cpu', 1, {threads = 1})}
  local function loader()
    return T.data.Loader{source = T.data.folder(folder), batch = 4, threads = 1, last = 'keep', shuffle = false,
                         transforms = {resize = 16, crop = 16, mean = 0.5, std = 0.25}}
  end
  local sums = {loss = 0, correct = 0, count = 0}
  local l = loader()
  for images, labels in l:batches(1) do
    local r = engine:evaluate_batch(images, labels)
    sums.loss, sums.correct, sums.count = sums.loss + r.loss, sums.correct + r.correct, sums.count + r.count
  end
  l:close()
  l = loader()
  local r = engine:evaluate(l)
  t.eq(r.samples, 18)
  t.near(r.loss, sums.loss / sums.count, 1e-6)
  t.near(r.accuracy, sums.correct / sums.count, 1e-9)
  t.raises(function() engine:evaluate(l, {batch = 2}) end, 'a T.data.Loader brings its own batch')
  l:close()
  -- evaluate(nil) said "attempt to call method 'batch' (a nil value)".
  t.raises(function() engine:evaluate(nil) end,
           "bad argument #1 to 'evaluate' (a data set (T.data.mnist, T.data.dataset) or a T.data.Loader expected, got nil)")
  t.raises(function() engine:evaluate(T.data.folder(folder)) end, 'expected, got tandem.Source')
end)

t.test('loader batches: shapes, labels, layouts, devices', function()
  local device = T.devices('cpu', 1, {threads = 1})[1]
  local loader = T.data.Loader{source = T.data.folder(folder), batch = 4, threads = 2,
                               last = 'keep', device = device, layout = 'channels_last',
                               transforms = {resize = 24, crop = 20, random_crop = true,
                                             flip = true, mean = {0.5, 0.5, 0.5}, std = 0.25}}
  t.eq(loader:size(), 18)
  t.eq(loader:batches_per_epoch(), 5)
  local counts, seen = {}, 0
  for images, labels, count in loader:batches(1) do
    t.eq(images:shape(), {count, 3, 20, 20})
    t.eq(labels:dtype(), 'i32')
    t.ok(tostring(images):find('cpu:0', 1, true), tostring(images))
    for _, l in ipairs(labels:to_flat()) do t.ok(l >= 0 and l < 3, 'label ' .. l) end
    counts[#counts + 1] = count
    seen = seen + count
  end
  t.eq(counts, {4, 4, 4, 4, 2})
  t.eq(seen, 18)
  local s = loader:stats()
  t.eq(s.batches, 5)
  t.eq(s.images_decoded, 18)
  t.eq(s.skipped, 0)
  t.ok(s.decode_rate > 0 and s.read_rate > 0 and s.wait_fraction >= 0, 'rates')
  loader:close()
  t.eq(loader:next(), nil, 'closed: no batch')
end)

t.test('the same batches with 1 or 3 decode threads; shards split the epoch', function()
  local function first_batch(threads)
    local loader = T.data.Loader{source = T.data.folder(folder), batch = 6, threads = threads,
                                 seed = 5, transforms = {crop = 24, random_crop = true, flip = true,
                                                         brightness = 0.3, saturation = 0.3}}
    loader:start(2)
    local images, labels = loader:next()
    loader:close()
    return images:to_flat(), labels:to_flat()
  end
  local a, la = first_batch(1)
  local b, lb = first_batch(3)
  t.eq(lb, la)
  t.ok(table.concat(a, ',') == table.concat(b, ','), 'identical pixels')
  local total = 0
  for index = 1, 3 do
    local shard = T.data.Loader{source = T.data.folder(folder), batch = 1, last = 'keep',
                                shard = {index = index, count = 3}, transforms = {crop = 24}}
    t.ok(tostring(shard):find('shard ' .. index .. '/3', 1, true), tostring(shard))
    for _ in shard:batches(1) do total = total + 1 end
  end
  t.eq(total, 18, 'every sample in exactly one of 3 shards')
end)

t.test('mkdb round trip: folder -> LMDB -> the same pixels and labels', function()
  for _, encoding in ipairs{'png', 'raw'} do
    local db = dir .. '/db_' .. encoding
    local out = run{'mkdb', folder, db, '--encoding=' .. encoding, '--threads=2'}
    t.ok(out:find('wrote 18 records', 1, true), out)
    out = run{'mkdb', '--check', db}
    t.ok(out:find('18 records, 0 do not decode', 1, true), out)
    local function all(source)
      local loader = T.data.Loader{source = source, batch = 18, shuffle = false,
                                   transforms = {resize = 24, crop = 24}}
      loader:start(1)
      local images, labels = loader:next()
      loader:close()
      return images:to_flat(), labels:to_flat()
    end
    local a, la = all(T.data.folder(folder))
    local b, lb = all(assert(T.data.lmdb(db)))
    t.eq(lb, la, encoding .. ' labels')
    t.ok(table.concat(a, ',') == table.concat(b, ','), encoding .. ' pixels')
    -- The folder's class names travel with the database (classes.txt beside data.mdb).
    t.eq(T.data.lmdb(db):class_names(), {'class_000', 'class_001', 'class_002'})
  end
  t.ok(run{'dbinfo', dir .. '/db_png'}:find('class_002', 1, true), 'dbinfo names the classes')
  -- Fewer names than the records' labels: refused, naming the file.
  S.write(dir .. '/db_png/classes.txt', 'only_one\n')
  t.raises(function() T.data.lmdb(dir .. '/db_png') end, 'classes.txt names 1 classes, but a record of')
  S.write(dir .. '/db_png/classes.txt', 'class_000\nclass_001\nclass_002\n')
  local _, rc = S.tandem{'mkdb', folder, dir .. '/db_png'}
  t.eq(rc, 1, 'refuses to overwrite without --overwrite')
end)

t.test('list files, idx import, mean and dbinfo', function()
  S.write(dir .. '/list.txt', 'png/class_001/00000.png 1\npng/class_002/00003.png 2\n')
  local list = assert(T.data.list(dir .. '/list.txt'))
  t.eq(list:size(), 2)
  t.eq(list:classes(), 3)
  t.eq(T.data.list(dir .. '/list.txt', {classes = 7}):classes(), 7)
  t.raises(function() T.data.list(dir .. '/list.txt', {classes = 2}) end,
           'has label 2, out of range for 2 classes')
  -- Two 2x2 images, labels 0 and 4.
  S.write(dir .. '/img.idx', string.char(0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2,
                                         0, 50, 100, 150, 200, 250, 10, 20))
  S.write(dir .. '/lab.idx', string.char(0, 0, 8, 1, 0, 0, 0, 2, 0, 4))
  run{'import-idx', dir .. '/img.idx', dir .. '/lab.idx', dir .. '/idx_db'}
  local db = assert(T.data.lmdb(dir .. '/idx_db'))
  t.eq(db:classes(), 5)
  local loader = T.data.Loader{source = db, batch = 2, shuffle = false}
  loader:start(1)
  local images, labels = loader:next()
  t.eq(labels:to_flat(), {0, 4})
  t.near(images:to_flat()[2], 50 / 255, 1e-6)
  local out = run{'mean', dir .. '/idx_db'}
  t.ok(out:find('mean = {' .. ('%.4f'):format((0 + 50 + 100 + 150 + 200 + 250 + 10 + 20) / 8 / 255),
                1, true), out)
  out = run{'dbinfo', dir .. '/db_png', '--grid=' .. dir .. '/grid.png', '--grid-count=9'}
  t.ok(out:find('classes: 3', 1, true) and out:find('encodings: png 18', 1, true), out)
  t.eq(S.read(dir .. '/grid.png'):sub(1, 4), '\137PNG')
end)

t.test('corrupt images are skipped and counted; strict makes them errors', function()
  local bad = dir .. '/bad'
  run{'gen-images', bad, '--classes=2', '--per-class=4', '--min-size=24', '--max-size=24'}
  S.write(bad .. '/class_001/zz_broken.jpg', '\255\216\255\224 not a JPEG at all \255\217')
  local loader = T.data.Loader{source = T.data.folder(bad), batch = 3, last = 'keep', quiet = true}
  t.eq(loader:batches_per_epoch(), 3, 'nine samples, none known corrupt yet')
  local n = 0
  for _, _, count in loader:batches(1) do n = n + count end
  t.eq(n, 8)
  t.eq({loader:stats().skipped, loader:stats().corrupt}, {1, 1})
  -- Once found, a corrupt sample is left out of the count of every later epoch.
  t.eq({loader:batches_per_epoch(), loader:batches_per_epoch(7)}, {3, 3})
  local drop = T.data.Loader{source = T.data.folder(bad), batch = 3, last = 'drop', quiet = true}
  t.eq(drop:batches_per_epoch(), 3)
  local batches = 0
  for _ in drop:batches(1) do batches = batches + 1 end
  t.eq(batches, 2)
  t.eq(drop:batches_per_epoch(), 2, 'eight good samples: two whole batches of three')
  for _ in loader:batches(2) do end
  t.eq({loader:stats().skipped, loader:stats().corrupt}, {2, 1}, 'met twice, one sample')
  -- The warning names the file once, not every epoch.
  local script = S.tmpname('.lua')
  S.write(script, ("local T = require 'tandem'\n"
                   .. "local l = T.data.Loader{source = T.data.folder(%q), batch = 3, last = 'keep'}\n"
                   .. "for epoch = 1, 3 do for _ in l:batches(epoch) do end end\n"):format(bad))
  local out = run{'run', script}
  local _, warnings = out:gsub('warning: skipping corrupt sample', '')
  t.eq(warnings, 1, out)
  t.ok(out:find('zz_broken.jpg', 1, true), out)
  local strict = T.data.Loader{source = T.data.folder(bad), batch = 3, strict = true}
  t.raises(function() for _ in strict:batches(1) do end end, 'zz_broken.jpg')
  local out = run{'mkdb', bad, dir .. '/bad_db'}
  t.ok(out:find('wrote 8 records', 1, true) and out:find('1 skipped', 1, true), out)
end)

t.test('loader options and error messages', function()
  local src = T.data.folder(folder)
  t.raises(function() T.data.Loader{batch = 4} end, "option 'source' is required")
  t.raises(function() T.data.Loader{source = src, batch = 4, last = 'round'} end,
           "T.data.Loader: option 'last' must be 'drop', 'keep' or 'pad', got 'round'")
  t.raises(function() T.data.Loader{source = src, transforms = {crop = 8, rotate = 1}} end,
           "T.data.Loader: unknown option 'transforms.rotate' (known: transforms.channels, ")
  t.raises(function() T.data.Loader{source = src, shard = {index = 4, count = 3}} end,
           "T.data.Loader: option 'shard.index' must be an integer in [1, 3], got 4")
  t.raises(function() T.data.Loader{source = src, shard = {index = 0, count = 3}} end,
           "option 'shard.index' must be an integer in [1, 3], got 0")
  t.raises(function() T.data.Loader{source = src, shard = {index = 1, count = 0}} end,
           "T.data.Loader: option 'shard.count' must be an integer in [1, 1048576], got 0")
  t.raises(function() T.data.Loader{source = src, layout = 'hwc'} end,
           "T.data.Loader: option 'layout' must be 'contiguous' or 'channels_last', got 'hwc'")
  t.raises(function() T.data.Loader{source = src, transforms = {mean = {1, 2, 3, 4}}} end,
           "T.data.Loader: option 'transforms.mean' must be a finite number or a list of 1 or 3 of them, got a list of 4 entries")
  t.raises(function() T.data.Loader{source = T.zeros{1}} end,
           "option 'source' must be a data source (T.data.folder, T.data.lmdb, T.data.list), got tandem.Tensor")
  local big = T.data.Loader{source = src, transforms = {crop = 500}}
  t.raises(function() for _ in big:batches(1) do end end, 'smaller than the 500x500 crop')
  local none, message = T.data.lmdb(dir .. '/no_db')
  t.eq(none, nil)
  t.ok(message:find('no such file', 1, true), message)
  t.raises(function() T.data.lmdb(folder) end, 'the directory has no data.mdb')
  local _, rc = S.tandem{'mkdb', dir .. '/nowhere', dir .. '/x'}
  t.eq(rc, 1)
  local out = S.tandem{'mkdb', folder, dir .. '/y', '--resize=big'}
  t.ok(out:find('--resize must be an integer', 1, true), out)
end)

-- Damaged databases get a clear answer, not a crash: a data.mdb cut short (SIGBUS) and a record
-- with a damaged header (its label used to come back as -1, and dbinfo indexed with it).
t.test('damaged databases: a truncated file and a damaged record', function()
  local db = dir .. '/damaged_db'
  run{'mkdb', folder, db, '--encoding=raw'}  -- records of 2-5 KB: each on pages of its own
  local data = S.read(db .. '/data.mdb')
  local at = data:find('TDRC', 1, true)
  S.write(db .. '/data.mdb', data:sub(1, at - 1) .. 'XXXX' .. data:sub(at + 4))
  local out = run{'dbinfo', db}
  t.ok(out:find('damaged records, no label: 1', 1, true), out)
  local key = out:match("record '(%d+)' is not a Tandem record")
  t.ok(key, out)
  local source = assert(T.data.lmdb(db))
  for i = 1, source:size() do
    if source:key(i) == key then
      t.raises(function() source:label(i) end, "record '" .. key .. "' is not a Tandem record")
    else
      t.ok(source:label(i) >= 0)
    end
  end

  S.write(db .. '/data.mdb', data:sub(1, math.floor(#data / 2)))
  local message, rc = S.tandem{'dbinfo', db}
  t.eq(rc, 1, message)
  t.ok(message:find('is damaged: ' .. db .. '/data.mdb holds', 1, true), message)
  t.raises(function() T.data.lmdb(db) end, 'the file was cut short')
end)

t.test('cleanup', function()
  os.execute('rm -rf ' .. S.quote(dir))
  S.cleanup()
end)
