-- parallel.placement (issue 18, item 4): a graph's branches on devices of their own train as one
-- device does, alone, with groups and with micro-batches; checkpoints load across placements;
-- mistakes name the layer or the stage; the planner simulates a placement.
local t = require 'tandem.test'
local T = require 'tandem'
local nn = T.nn
local S = dofile('tests/lua/support.lua')
local batch = S.toy_batch

-- Three branches on 1x8x8 images joined along channels, then a head.
local function net()
  return nn.Sequential{S.inception(), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(6 * 16, 3)}
end

-- Branches 1 and 3 on one device, branch 2 on another (both read the images), the rest on a third.
local placement = {{'mixed.b1', 'mixed.b3'}, {'mixed.b2'}, {'mixed.join', 'relu1', 'pool1', 'flatten1', 'fc1'}}

local function engine(parallel, devices)
  return T.Engine{net = net(), devices = T.devices('cpu', devices, {threads = 1}),
                  optim = T.optim.SGD{lr = 0.05, momentum = 0.9}, seed = 4, parallel = parallel}
end

local weights = S.weights

local function train(e)
  for step = 1, 4 do e:step(batch(16, step)) end
  return weights(e)
end

t.test('branches on their own devices train as one device', function()
  local one = train(engine({}, 1))
  t.near(train(engine({placement = placement}, 3)), one, 1e-5, 'three stages')
  t.near(train(engine({groups = 2, placement = placement}, 6)), one, 1e-5, 'two groups')
  t.near(train(engine({micro_batches = 2, pipeline = '1f1b', placement = placement}, 3)), one, 1e-5,
         'two micro-batches, 1f1b')
end)

t.test('stages are named by their layers; a checkpoint loads on one device', function()
  local placed = engine({stages = 3, placement = placement}, 3)
  local stages = placed:stages()
  t.eq({stages[1].first, stages[1].last, stages[2].first, stages[3].first, stages[3].last},
       {'mixed.b1', 'mixed.b3', 'mixed.b2', 'mixed.join', 'fc1'})
  train(placed)
  local path = S.tmpname('.safetensors')
  placed:save(path)
  local one = engine({}, 1)
  one:load(path)
  t.eq(weights(one), weights(placed))
  S.cleanup()
end)

t.test('mistakes name the layer or the stage', function()
  t.raises(function() engine({placement = {{'mixed.b1', 'mixed.b3'}, {'mixed.zz'}}}, 2) end,
           {"stage 2 names 'mixed.zz'", 'no layer of the net'})
  t.raises(function() engine({placement = {{'mixed'}, {'mixed.b2', 'relu1', 'pool1', 'flatten1', 'fc1'}}}, 2) end,
           "'mixed.b2' is in stage 1 and in stage 2")
  t.raises(function() engine({placement = {{'mixed'}, {'relu1', 'pool1', 'flatten1'}}}, 2) end,
           "'fc1' is in no stage")
  t.raises(function() engine({placement = {'mixed', 'fc1'}}, 2) end, 'must be a list of stages')
  t.raises(function() engine({stages = 2, placement = placement}, 2) end,
           'parallel.placement lists 3 stages, parallel.stages is 2')
  t.raises(function() engine({stages = 3, placement = placement, split = {'mixed', 'relu1'}}, 3) end, 'give it or a split, not both')
end)

t.test('the planner weighs a placement by its units', function()
  -- Measured here on CPU devices; by the hardware table's roofline on a DGX-1's GPUs.
  local topologies = {measured = T.plan.topology('cpu', {devices = 3, threads = 1, memory = '1GB'}),
                      analytic = T.plan.topology('dgx1')}
  for _, cost in ipairs{'analytic', 'measured'} do
    local topology = topologies[cost]
    local costs = T.plan.costs{net = net(), sample = {1, 8, 8}, placement = placement, cost = cost, iterations = 2,
                               warmup = 1}
    local one = T.plan.simulate{costs = costs, batch = 16, topology = topology, plan = {stages = 3}}
    local piped = T.plan.simulate{costs = costs, batch = 16, topology = topology,
                                  plan = {stages = 3, micro_batches = 4, pipeline = '1f1b'}}
    t.eq(#one.devices, 3, cost)
    t.ok(one.step_ms > 0 and piped.step_ms > 0, cost)
    for _, d in ipairs(one.devices) do t.ok(d.busy_ms > 0, cost .. ': every stage computes') end
    t.raises(function() T.plan.simulate{costs = costs, batch = 16, topology = topology, plan = {stages = 2}} end,
             'the placement has 3 stages; give the plan stages = 3 and no split')
    t.raises(function() T.plan.search{costs = costs, batch = 16, topology = topology} end,
             'chooses the stages itself; to weigh a placement, simulate it')
  end
  t.raises(function() T.plan.costs{net = net(), sample = {1, 8, 8}, placement = {{'mixed'}, {'zz'}}} end,
           "stage 2 names 'zz'")
  t.raises(function() T.plan.costs{net = net(), sample = {1, 8, 8}, placement = 'mixed'} end,
           "T.plan.costs: option 'placement' must be a list of stages, each a list of layer names, got 'mixed'")
end)

t.test('the automatic split puts a graph\'s branches on stages of their own', function()
  -- The whole net is one graph, its head inside: the partitioner cuts its 6 units into 3 stages,
  -- so two stages begin inside it whatever the profiles (timed on a shared machine) say.
  local function graph_net()
    local g = nn.Graph{name = 'mixed'}
    local x = g:input('x')
    local b1 = g:add(nn.Conv2d(1, 2, 1, {name = 'b1'}), x)
    local b2 = g:add(nn.Sequential{nn.Conv2d(1, 2, 1), nn.ReLU(), nn.Conv2d(2, 3, 3, {pad = 1}), name = 'b2'}, x)
    local b3 = g:add(nn.MaxPool2d(3, {stride = 1, pad = 1, name = 'b3'}), x)
    local joined = g:add(nn.Concat{name = 'join'}, b1, b2, b3)
    g:output(g:add(nn.Linear(6 * 64, 3, {name = 'head'}), g:add(nn.Flatten{name = 'flat'}, joined)))
    return nn.Sequential{g}
  end
  local function graph_engine(parallel, devices)
    return T.Engine{net = graph_net(), devices = T.devices('cpu', devices, {threads = 1}),
                    optim = T.optim.SGD{lr = 0.05, momentum = 0.9}, seed = 4, parallel = parallel}
  end
  local auto = graph_engine({stages = 3, split = 'auto'}, 3)
  auto:prepare({1, 8, 8}, 16)
  local names = {}
  for _, stage in ipairs(auto:stages()) do names[#names + 1] = stage.first end
  t.eq(#names, 3)
  t.ok(names[2]:find('^mixed%.') and names[3]:find('^mixed%.'), 'stages begin inside the graph: ' .. table.concat(names, ' '))
  t.near(train(auto), train(graph_engine({}, 1)), 1e-5, 'trains as one device')
end)

t.test('the planner chooses a placement of a graph\'s nodes, and a plan file carries it', function()
  -- Each layout keeps the faster of its best split between top-level layers and its best one
  -- anywhere. Splitting the branches apart wins in about half of the nine 3-stage layouts, by
  -- tenths of a millisecond measured on this machine: under a loaded CI machine all nine once
  -- went the other way. This test is of the plumbing, so it searches again (at most twice more)
  -- until one plan places the units.
  local placed
  for _ = 1, 3 do
    local r = T.plan.search{net = net(), sample = {1, 8, 8}, batch = 16, iterations = 2, warmup = 1,
                            topology = T.plan.topology('cpu', {devices = 3, threads = 1, memory = '1GB'})}
    for _, p in ipairs(r.plans) do if p.stages == 3 and p.placement then placed = p break end end
    if placed then break end
  end
  t.ok(placed, 'a 3-stage plan places the units')
  t.eq(#placed.placement, 3)
  t.eq(#placed.split, 0, 'no cuts of top-level layers beside the placement')
  local units = {}
  for _, stage in ipairs(placed.placement) do
    for _, name in ipairs(stage) do units[#units + 1] = name end
  end
  t.eq(units, {'mixed.b1', 'mixed.b2', 'mixed.b3', 'mixed.join', 'relu1', 'pool1', 'flatten1', 'fc1'},
       'every unit once, in the net\'s order')
  t.ok(placed.lua:find("placement = {", 1, true) and placed.lua:find("device_order = 'packed'", 1, true), placed.lua)
  local path = S.tmpname('.lua')
  S.write(path, placed.lua)
  t.eq(T.plan.load(path).placement, placed.placement)
  local opt = T.options({plan = path, threads = 1}, T.parallel.defaults{batch = 16})
  local devices, parallel = T.parallel.layout(opt, net(), {1, 8, 8})
  t.eq(#devices, 3)
  t.eq(parallel.placement, placed.placement)
  local e = T.Engine{net = net(), devices = devices, optim = T.optim.SGD{lr = 0.05, momentum = 0.9}, seed = 4,
                     parallel = parallel}
  t.near(train(e), train(engine({}, 1)), 1e-5, 'the planned placement trains as one device')
  -- A simulation of the same costs cuts the units as the search does.
  local sim = T.plan.simulate{net = net(), sample = {1, 8, 8}, batch = 16, iterations = 2, warmup = 1,
                              topology = T.plan.topology('cpu', {devices = 3, threads = 1, memory = '1GB'}),
                              plan = {stages = 3, split = {'mixed.b1', 'mixed.join'}}}
  t.eq(sim.split, {'mixed.b1', 'mixed.join'})
  t.eq(#sim.devices, 3)
  S.cleanup()
end)

t.test('a placement may end a stage inside a residual block', function()
  -- A block with a projection shortcut; stage 1 runs the stem, the body's first convolution and
  -- the shortcut's, stage 2 the rest of both branches, their add and the head.
  local function residual_net()
    return nn.Sequential{
      nn.Conv2d(1, 4, 3, {pad = 1}), nn.BatchNorm2d(4), nn.ReLU(),
      nn.Residual{body = {nn.Conv2d(4, 6, 3, {pad = 1, stride = 2}), nn.BatchNorm2d(6), nn.ReLU(),
                          nn.Conv2d(6, 6, 3, {pad = 1}), nn.BatchNorm2d(6)},
                  shortcut = {nn.Conv2d(4, 6, 1, {stride = 2}), nn.BatchNorm2d(6)}},
      nn.ReLU(), nn.Flatten(), nn.Linear(6 * 4 * 4, 3)}
  end
  local inside = {{'conv1', 'bn1', 'relu1', 'block1.body.conv1', 'block1.shortcut.conv1'},
                  {'block1.body.bn1', 'block1.body.relu1', 'block1.body.conv2', 'block1.body.bn2',
                   'block1.shortcut.bn1', 'block1.add', 'relu2', 'flatten1', 'fc1'}}
  local function residual_engine(parallel, devices)
    return T.Engine{net = residual_net(), devices = T.devices('cpu', devices, {threads = 1}),
                    optim = T.optim.SGD{lr = 0.05, momentum = 0.9}, seed = 4, parallel = parallel}
  end
  local one = train(residual_engine({}, 1))
  local placed = residual_engine({placement = inside}, 2)
  t.near(train(placed), one, 0, "two stages: the same bits")
  t.eq({placed:stages()[1].last, placed:stages()[2].first}, {'block1.shortcut.conv1', 'block1.body.bn1'})
  t.near(train(residual_engine({placement = inside, groups = 2, micro_batches = 2, pipeline = '1f1b'}, 4)), one,
         1e-5, 'two groups of two micro-batches')
  t.raises(function() residual_engine({placement = {{'conv1', 'bn1', 'relu1', 'block1.body.zz'}, {'fc1'}}}, 2) end,
           {"names 'block1.body.zz'", "'block1.body.conv1'"})
end)

t.test('a recipe takes a placement as --placement', function()
  local opt = T.options({placement = 'mixed.b1,mixed.b3/mixed.b2/mixed.join,relu1,pool1,flatten1,fc1', threads = 1},
                        T.parallel.defaults{})
  local devices, parallel = T.parallel.layout(opt, net(), {1, 8, 8})
  t.eq(#devices, 3)
  t.eq(parallel.placement, placement)
  local e = T.Engine{net = net(), devices = devices, optim = T.optim.SGD{lr = 0.05, momentum = 0.9}, seed = 4,
                     parallel = parallel}
  t.near(train(e), train(engine({placement = placement}, 3)), 0, 'the same as the option')
  t.raises(function() T.parallel.layout(T.options({placement = 'a,,b/c'}, T.parallel.defaults{})) end,
           "--placement=a,,b/c: stage 1 has an empty name")
  t.raises(function() T.parallel.layout(T.options({placement = 'a/b', stages = 3}, T.parallel.defaults{})) end,
           '--placement lists 2 stages, --stages is 3')
end)
