-- T.Engine's parallel option: groups x stages x micro-batches from a recipe.
local t = require 'tandem.test'
local T = require 'tandem'
local nn = T.nn

local function net()
  return nn.Sequential{
    nn.Conv2d(1, 4, 3, {pad = 1}), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(4 * 4 * 4, 16), nn.ReLU(), nn.Linear(16, 3),
  }
end

local batch = dofile('tests/lua/support.lua').toy_batch

local function engine(parallel, devices)
  return T.Engine{net = net(), devices = T.devices('cpu', devices, {threads = 1}),
                  optim = T.optim.SGD{lr = 0.05, momentum = 0.9}, seed = 4, parallel = parallel}
end

local function train(e)
  local r
  for step = 1, 4 do r = e:step(batch(16, step)) end
  return r.loss
end

t.test('2 groups x 2 stages x 4 micro-batches train like one device', function()
  local one = train(engine({}, 1))
  local split = train(engine({groups = 2, stages = 2, micro_batches = 4, schedule = '1f1b',
                              split = {'flatten1'}}, 4))
  t.ok(math.abs(one - split) < 1e-4 * math.abs(one), ('loss %.7g vs %.7g'):format(one, split))
  -- Small buckets reduced after backward give the same sums as reducing during it.
  local after = train(engine({groups = 2, stages = 2, micro_batches = 4, schedule = '1f1b',
                              split = {'flatten1'}, overlap = false, bucket_bytes = 256}, 4))
  t.eq(after, train(engine({groups = 2, stages = 2, micro_batches = 4, schedule = '1f1b',
                            split = {'flatten1'}, bucket_bytes = 256}, 4)))
  local by_index = train(engine({stages = 2, micro_batches = 2, split = '4'}, 2))
  t.ok(math.abs(one - by_index) < 1e-4 * math.abs(one), ('loss %.7g vs %.7g'):format(one, by_index))
end)

t.test('a bad parallel option is a clear error', function()
  t.raises(function() engine({groups = 2, stages = 2}, 3) end, '2 groups x 2 stages need 4 devices; given 3')
  t.raises(function() engine({stages = 2, split = {'fc9'}}, 2) end, "unknown layer 'fc9'")
  t.raises(function() engine({stages = 2, split = {7}}, 2) end, 'cut after layer 1..6')
  t.raises(function() engine({stages = 2, schedule = 'zigzag'}, 2) end, 'unknown pipeline schedule')
  t.raises(function() engine({stagez = 2}, 2) end, "unknown option 'stagez'")
  t.raises(function() engine({groups = 2, bucket_bytes = 0}, 2) end, 'bucket_bytes must be at least 1')
end)

t.test('the pipeline option, and its old name schedule for one release', function()
  local piped = train(engine({stages = 2, micro_batches = 2, pipeline = '1f1b'}, 2))
  t.eq(piped, train(engine({stages = 2, micro_batches = 2, schedule = '1f1b'}, 2)))
  t.raises(function() engine({stages = 2, pipeline = 'zigzag'}, 2) end, "unknown pipeline schedule 'zigzag'")
  t.raises(function() engine({stages = 2, pipeline = '1f1b', schedule = 'gpipe'}, 2) end,
           'give pipeline or its old name schedule, not both')
  t.raises(function() engine({groups = 0}, 1) end, 'parallel.groups must be at least 1, got 0')
  -- One flag in a list is not 'true for every stage' (that is recompute = true).
  t.raises(function() engine({stages = 2, recompute = {true}}, 2) end, 'parallel.recompute lists 1 flag for 2 stages')
  -- The recipes' flags and defaults come from the same schema.
  local defaults = T.parallel.defaults{}
  for _, o in ipairs(require('tandem.core').parallel_options()) do
    if o.flag ~= '' then t.ok(defaults[o.flag] ~= nil, 'a recipe default for --' .. o.flag) end
  end
  -- Declarations: {default, help, kind =, choices =, group =} (lua/tandem/command_line.lua).
  t.eq(defaults.pipeline[1], 'gpipe')
  t.eq(defaults.pipeline.choices, {'gpipe', '1f1b'})
  t.eq(defaults.bucket_mb[1], 25)
  t.eq(defaults.groups.kind, 'positive_int')
  t.eq(T.parallel.defaults{schedule = '1f1b'}.pipeline[1], '1f1b')
  t.eq(T.parallel.defaults{stages = 2}.stages[2], defaults.stages[2], 'a recipe default keeps the help')
  local opt = T.options({schedule = '1f1b', stages = 2, micro_batches = 2}, T.parallel.defaults{})
  local _, parallel = T.parallel.layout(opt)
  t.eq(parallel.pipeline, '1f1b')
  t.eq(parallel.schedule, nil)
  t.eq(parallel.bucket_bytes, 25 * 1048576)
end)

t.test('engine:stages() and a Chrome trace of every worker', function()
  local e = T.Engine{net = net(), devices = T.devices('cpu', 4, {threads = 1}), trace = true,
               optim = T.optim.SGD{lr = 0.05}, parallel = {groups = 2, stages = 2, micro_batches = 2,
                                                           split = {'pool1'}}}
  -- print(engine) names every device and the layout (it said 'on cpu:0').
  t.eq(tostring(e), 'Engine(7 layers on 4 devices cpu:0..cpu:3, 2 groups x 2 stages x 2 micro-batches (gpipe), step 0)')
  local stages = e:stages()
  t.eq(#stages, 2)
  t.eq(stages[1].first, 'conv1'); t.eq(stages[1].last, 'pool1'); t.eq(stages[2].first, 'flatten1')
  t.eq(#stages[2].devices, 2)
  train(e)
  local steps = e:steps()
  e:evaluate_batch(batch(16, 1))
  local path = os.tmpname()
  e:write_trace(path)
  local text = io.open(path):read('*a')
  os.remove(path)
  for _, category in ipairs{'"forward"', '"backward"', '"transfer"', '"allreduce"', '"optimizer"'} do
    t.ok(text:find(category, 1, true), 'the trace has ' .. category)
  end
  -- Every span names its step, and evaluation is marked as such.
  t.ok(text:find('"step": 1, "phase": "train"', 1, true), 'the first step\'s spans')
  t.ok(text:find(('"step": %d, "phase": "train"'):format(steps), 1, true), 'the last step\'s spans')
  t.ok(text:find(('"step": %d, "phase": "evaluate"'):format(steps), 1, true), 'the evaluation\'s spans')
  t.raises(function() engine({}, 1):write_trace(path) end, 'records no trace')
end)

t.test("split = 'auto' profiles, prints its partition and trains", function()
  local e = engine({stages = 2, micro_batches = 2, split = 'auto'}, 2)
  t.raises(function() e:stages() end, 'not chosen yet')
  local text = e:prepare({1, 8, 8}, 16)
  t.ok(text:find('stage'), text)
  t.eq(#e:stages(), 2)
  t.ok(train(e) > 0)
end)

t.test('batch_norm and recompute options', function()
  local e = engine({stages = 2, micro_batches = 2, batch_norm = 'deferred', recompute = {true, false}}, 2)
  t.ok(train(e) > 0)
  t.ok(train(engine({groups = 2, stages = 2, micro_batches = 2, batch_norm = 'sync'}, 4)) > 0)
  t.raises(function() engine({stages = 2, batch_norm = 'sync', schedule = '1f1b'}, 2) end, 'gpipe')
  t.raises(function() engine({batch_norm = 'global'}, 1) end, "unknown batch-norm mode 'global'")
  t.raises(function() engine({stages = 2, recompute = {true, false, true}}, 2) end, 'one flag per stage')
end)

t.test('deterministic and model-averaging options', function()
  local a = train(engine({groups = 2, micro_batches = 2, deterministic = true}, 2))
  local b = train(engine({stages = 2, micro_batches = 4, deterministic = true}, 2))
  t.eq(a, b)  -- the losses of the last step, bit for bit
  t.ok(train(engine({groups = 2, average_every = 2}, 2)) > 0)
  t.raises(function() engine({groups = 2, average_every = 2, deterministic = true}, 2) end,
           'model averaging is not offered')
end)

-- A plan whose steps miss its prediction by more than 20% (over 20 steps or more) rests on
-- figures that no longer hold: the file keeping them goes, so the next --plan=auto measures.
t.test('T.parallel.compare drops the kept figures of a plan whose steps miss it', function()
  local S = dofile('tests/lua/support.lua')
  local file = S.tmpname('.json')
  S.write(file, '{}')
  local function kept()
    local f = io.open(file)
    if f then f:close() end
    return f ~= nil
  end
  local steps = {}
  for i = 1, 30 do steps[i] = 0.1 end  -- 100 ms each
  local function plan(ms) return {predicted_step_ms = ms, plan_label = '2x1x1', plan_cache_file = file} end
  T.parallel.compare(plan(85), steps)
  t.ok(kept(), '15% off: kept')
  T.parallel.compare(plan(70), {0.1, 0.1, 0.1})
  t.ok(kept(), 'three steps say too little: kept')
  T.parallel.compare({predicted_step_ms = 70, plan_label = '2x1x1'}, steps)
  t.ok(kept(), 'a plan not made from kept figures names no file')
  T.parallel.compare(plan(70), steps)
  t.ok(not kept(), '30% off: dropped')
  T.parallel.compare(plan(70), steps)  -- already gone: nothing to do, no error
  S.cleanup()
end)
