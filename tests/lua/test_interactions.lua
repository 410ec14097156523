-- Users' interaction data (issue 18, item 6; docs/data-format.md "Interaction data"): synthetic
-- users converted to LMDB read back as the text gives them; the compound net over them trains
-- the same on three devices (one sub-model each) as on one, and learns; the recipe takes
-- --interactions; T.data.Loader streams the database (the same samples, shuffled) and trains the
-- net a step, as recipes/compound.lua --interactions_db does; bad lines are refused naming the
-- file, line and field, leaving no database.
local t = require 'tandem.test'
local T = require 'tandem'
local S = dofile('tests/lua/support.lua')

local dir = S.tmpname('_interactions')
os.execute('mkdir -p ' .. S.quote(dir))
local text, db = dir .. '/users.tsv', dir .. '/users_db'

local function tandem(args)
  local out, rc = S.tandem(args)
  t.eq(rc, 0, out)
  return out
end

tandem{'gen-interactions', text, '--users=300', '--items=40', '--length=10', '--features=12', '--classes=4'}
local out = tandem{'import-interactions', text, db, '--length=8'}
t.ok(out:find('wrote 300 examples to', 1, true), out)

t.test('mkdb --check reads an interaction database as the loader does', function()
  local o = tandem{'mkdb', '--check', db}
  t.ok(o:find('300 records, 0 do not decode', 1, true), o)
end)

t.test('the text and its database give the same samples', function()
  local a, info = T.data.interactions(text, {length = 8})
  local b, db_info = T.data.interactions(db)
  t.eq(info.length, 8)
  t.eq(info.features, 12)
  t.eq(info.classes, 4)
  t.ok(info.items <= 41, 'ids 0..39 stored + 1: at most 41 rows')
  for _, k in ipairs{'length', 'features', 'items', 'classes', 'size'} do t.eq(db_info[k], info[k], k) end
  local order = T.data.epoch_order(a:size(), 0, 0, false)
  local xa, ya = a:batch(order)
  local xb, yb = b:batch(order)
  t.eq(xa:shape(), {300, 1, 1, 20})
  t.eq(xa:to_flat(), xb:to_flat())
  t.eq(ya:to_flat(), yb:to_flat())
  local info_out = tandem{'dbinfo', db}
  t.ok(info_out:find('interaction 300', 1, true) and info_out:find('8 items + 12 features', 1, true), info_out)
  t.raises(function() T.data.interactions(db, {length = 9}) end, 'holds sequences of 8 items')
  local described = T.data.interactions_info(db)
  for _, k in ipairs{'length', 'features', 'items', 'classes', 'size'} do t.eq(described[k], info[k], k) end
end)

-- Each row of `x` (N x 1 x 1 x W) with its label as text, sorted: a data set's samples whatever their order.
local function rows(x, y, count)
  local flat, labels, width, out = x:to_flat(), y:to_flat(), x:shape()[4], {}
  for i = 1, count or x:shape()[1] do
    local row = {labels[i]}
    for j = 1, width do row[j + 1] = ('%.9g'):format(flat[(i - 1) * width + j]) end
    out[i] = table.concat(row, ' ')
  end
  return out
end

t.test('T.data.Loader streams the database: the in-memory samples, shuffled and sharded', function()
  local memory = T.data.interactions(db)
  local expected = rows(memory:batch(T.data.epoch_order(memory:size(), 0, 0, false)))
  -- Shard 1's first batch unshuffled: the records at 1, 3, ... 31 in the file's order.
  local unshuffled = {}
  for i = 1, 16 do unshuffled[i] = expected[2 * i - 1] end
  table.sort(expected)
  local source = assert(T.data.lmdb(db))
  t.ok(tostring(source):find('300 interaction records', 1, true), tostring(source))
  local streamed, first = {}, nil
  for shard = 1, 2 do
    local loader = T.data.Loader{source = source, batch = 16, threads = 2, last = 'keep', seed = 4,
                                 shard = {index = shard, count = 2}}
    for x, y, count in loader:batches(1) do
      t.eq(x:shape(), {count, 1, 1, 20})
      first = first or rows(x, y, count)
      for _, r in ipairs(rows(x, y, count)) do streamed[#streamed + 1] = r end
    end
    t.eq(loader:stats().skipped, 0)
  end
  t.ok(table.concat(first, '\n') ~= table.concat(unshuffled, '\n'), 'shuffled')
  table.sort(streamed)
  t.eq(streamed, expected)
  t.raises(function() T.data.Loader{source = source, transforms = {crop = 4}} end,
           "T.data.Loader: transforms option 'crop' is for images")
end)

-- The compound net over the interaction samples, on `devices` CPU devices (placement when 3).
local compound = dofile(T.recipe_path('nets/compound.lua'))
local function train(devices, steps)
  local data, info = T.data.interactions(db)
  local net, sample, parts = compound{interactions = info, classes = info.classes, hidden = 16, code = 4,
                                      embedding = 8}
  t.eq(sample, {1, 1, 20})
  local engine = T.Engine{net = net, devices = T.devices('cpu', devices, {threads = 1}), seed = 3,
                          optim = T.optim.Adam{lr = 0.01},
                          parallel = devices == 3 and {placement = parts.placement} or {}}
  local losses = {}
  for step = 1, steps do
    local order = T.data.epoch_order(data:size(), 1, step, true)
    losses[step] = engine:step(data:batch(order, 1, 60)).loss
  end
  return losses, engine
end

t.test('the interaction compound net trains on three devices as on one, and learns', function()
  local placed = train(3, 40)
  local one = train(1, 40)
  for step = 1, 40 do t.near(placed[step], one[step], 1e-4, 'step ' .. step) end
  local first = (one[1] + one[2] + one[3]) / 3
  local last = (one[38] + one[39] + one[40]) / 3
  t.ok(last < 0.6 * first, ('the loss falls: %.4f -> %.4f'):format(first, last))
end)

t.test('a T.data.Loader over the database trains the compound net a step', function()
  local info = T.data.interactions_info(db)
  local net = compound{interactions = info, classes = info.classes, hidden = 16, code = 4, embedding = 8}
  local engine = T.Engine{net = net, devices = T.devices('cpu', 1, {threads = 1}), seed = 3,
                          optim = T.optim.Adam{lr = 0.01}}
  local loader = T.data.Loader{source = assert(T.data.lmdb(db)), batch = 60, threads = 2}
  loader:start(1)
  local x, y = loader:next()
  local r = engine:step(x, y)
  t.eq(r.samples, 60)
  t.ok(r.loss > 0 and r.loss < 10, r.loss)
  loader:close()
end)

t.test('recipes/compound.lua --interactions_db trains streaming the database', function()
  local run = tandem{'run', 'recipes/compound.lua', '--interactions_db=' .. db, '--interactions_test=' .. text,
                     '--epochs=1', '--batch=30', '--hidden=16', '--code=4', '--progress=plain', '--threads=1'}
  t.ok(run:find('interactions: 300 examples to train on (streamed: Loader(LMDB', 1, true), run)
  t.ok(run:find('300 to test; 8 items then 12 features', 1, true), run)
  t.ok(run:find('epoch 1/1 %[#+%] 10/10'), run)
  t.ok(run:find('accuracy %d+%.%d+%%'), run)
  local o, rc = S.tandem{'run', 'recipes/compound.lua', '--interactions_db=' .. db}
  t.eq(rc, 2, o)
  t.ok(o:find('give held-out examples as --interactions_test=PATH', 1, true), o)
end)

t.test('recipes/compound.lua --interactions trains the interaction variant', function()
  local run = tandem{'run', 'recipes/compound.lua', '--interactions=' .. db, '--epochs=1', '--batch=30',
                     '--hidden=16', '--code=4', '--progress=plain', '--threads=1'}
  t.ok(run:find('interactions: 270 examples to train on, 30 to test; 8 items then 12 features', 1, true), run)
  t.ok(run:find('stage 1: compound.sample .. compound.lstm on cpu:0', 1, true), run)
  t.ok(run:find('class 3: positions %d+, %d+, %d+'), run)
  t.ok(run:find('accuracy %d+%.%d+%%'), run)
end)

t.test('a bad line is named by file, line and field, and writes nothing', function()
  local bad = dir .. '/bad.tsv'
  S.write(bad, '# header\nu1\t1 2\t0:1\t0\nu2\t3 -4\t0:1\t1\n')
  local o, rc = S.tandem{'import-interactions', bad, dir .. '/bad_db'}
  t.eq(rc, 1, o)
  t.ok(o:find("bad.tsv:3: field 2 (items): '-4' is not an item id", 1, true), o)
  t.ok(not io.open(dir .. '/bad_db/data.mdb') and not io.open(dir .. '/bad_db.partial/data.mdb'), 'nothing written')
  S.write(bad, 'u1\t1 2\t0:1\n')
  o = S.tandem{'import-interactions', bad, dir .. '/bad_db'}
  t.ok(o:find('bad.tsv:1: 3 tab-separated field(s), 4 expected', 1, true), o)
  local missing, why = T.data.interactions(dir .. '/none.tsv')
  t.ok(missing == nil and why:find('none.tsv'), why)
  t.raises(function() T.data.interactions(text, {length = -1}) end, 'length')
  o, rc = S.tandem{'import-interactions', '--help'}
  t.eq(rc, 0, o)
end)

os.execute('rm -rf ' .. S.quote(dir))
S.cleanup()
