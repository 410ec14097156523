-- nn.Graph: named nodes in a DAG, its joins and slices, printing, training in T.Engine alone and
-- on several devices, and the mistakes it names.
local t = require 'tandem.test'
local T = require 'tandem'
local nn = T.nn
local S = dofile('tests/lua/support.lua')
local batch = S.toy_batch

-- An Inception-style block on 1x8x8 images: three branches joined along channels.
local inception = S.inception

local function net()
  return nn.Sequential{inception(), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(6 * 16, 3)}
end

t.test('an Inception block: nodes, shapes, printing', function()
  local g = inception()
  t.eq(g:kind(), 'Graph')
  t.eq(g:inputs(), {'x'})
  t.eq(g:outputs(), {'join'})
  local nodes = g:nodes()
  t.eq(#nodes, 4)
  t.eq(nodes[4].name, 'join')
  t.eq(nodes[4].inputs, {'b1', 'b2', 'b3'})
  t.eq(g:output_shape{2, 1, 8, 8}, {2, 6, 8, 8})
  local text = tostring(g)
  t.ok(text:find("Graph 'mixed': 4 nodes", 1, true), text)
  t.ok(text:find('b1, b2, b3', 1, true), text)
  local summary = tostring(net():summary{1, 8, 8})
  t.ok(summary:find('inputs', 1, true) and summary:find('6x8x8', 1, true), summary)
  local y = g:forward(T.randn({2, 1, 8, 8}, 3))
  t.eq(y:shape(), {2, 6, 8, 8})
  -- Each branch's channels, in order: b1's two first.
  local x = T.randn({1, 1, 8, 8}, 4)
  local joined, first = g:forward(x):to_table(), g:children()[1]:forward(x):to_table()
  for c = 1, 2 do
    for i = 1, 8 do
      for j = 1, 8 do t.near(joined[1][c][i][j], first[1][c][i][j], 0) end
    end
  end
end)

t.test('a graph given whole, in any order; two inputs and two outputs', function()
  local g = nn.Graph{
    inputs = {'image', 'features'},
    {nn.Concat{name = 'both'}, 'code', 'features'},
    {nn.Linear(4, 3, {name = 'code'}), 'image'},
    outputs = {'both', 'code'},
  }
  t.eq(g:nodes()[1].name, 'code')
  local a, b = T.randn({2, 4}, 1), T.randn({2, 5}, 2)
  local out = g:forward{a, b}
  t.eq(#out, 2)
  t.eq(out[1]:shape(), {2, 8})
  t.eq(out[2]:shape(), {2, 3})
  -- The second part of 'both' is the features themselves.
  local both, features = out[1]:to_table(), b:to_table()
  for i = 1, 2 do
    for j = 1, 5 do t.near(both[i][3 + j], features[i][j], 0) end
  end
  t.raises(function() g:forward(a) end, 'needs one of each')
  t.raises(function() g:forward{a} end, 'takes 2 input(s), got 1')
end)

t.test('Add, Mul, Narrow, Reshape and split', function()
  local g = nn.Graph()
  local x = g:input('x')
  local left, right = g:split(x, {3, 3})
  local sum = g:add(nn.Add(), left, right)
  local prod = g:add(nn.Mul(), left, right)
  local both = g:add(nn.Concat(2), sum, prod)
  g:output(g:add(nn.Reshape(2, 3), both))
  local v = T.tensor{{1, 2, 3, 4, 5, 6}}
  local y = g:forward(v):to_table()
  t.eq(y, {{{5, 7, 9}, {4, 10, 18}}})
  t.eq(nn.Narrow(2, 2, 3):forward(v):to_table(), {{2, 3, 4}})
  t.eq(nn.Reshape({3, -1}):output_shape{4, 6}, {4, 3, 2})
  t.eq(nn.Reshape(-1):output_shape{4, 2, 3}, {4, 6})
end)

local function engine(parallel, devices, make)
  return T.Engine{net = (make or net)(), devices = T.devices('cpu', devices, {threads = 1}),
                  optim = T.optim.SGD{lr = 0.05, momentum = 0.9}, seed = 4, parallel = parallel}
end

local function train(e)
  local r
  for step = 1, 5 do r = e:step(batch(16, step)) end
  return r.loss
end

t.test('a net with a graph trains, alone and on several devices, like one device', function()
  local one = train(engine({}, 1))
  t.ok(one == one and one > 0, 'loss ' .. tostring(one))
  local groups = train(engine({groups = 2}, 2))
  t.ok(math.abs(one - groups) < 1e-4 * math.abs(one), ('groups: loss %.7g vs %.7g'):format(one, groups))
  local piped = train(engine({stages = 2, micro_batches = 2, split = {'mixed'}}, 2))
  t.ok(math.abs(one - piped) < 1e-4 * math.abs(one), ('stages: loss %.7g vs %.7g'):format(one, piped))
  -- A graph as the whole net: trained as the one entry of a Sequential.
  local whole = T.Engine{net = inception(), loss = nn.MSE(), optim = T.optim.SGD{lr = 0.01}}
  local x = T.randn({4, 1, 8, 8}, 5)
  local r1 = whole:step(x, T.zeros{4, 6, 8, 8})
  local r2 = whole:step(x, T.zeros{4, 6, 8, 8})
  t.ok(r2.loss < r1.loss, ('loss %g then %g'):format(r1.loss, r2.loss))
  t.ok(whole:net():get(1):name() == 'mixed')
end)

t.test('mistakes name the node', function()
  local g = nn.Graph{name = 'g'}
  local x = g:input('x')
  t.raises(function() g:add(nn.Linear(2, 2), 'nope') end, "takes 'nope', which is not an input or a node")
  t.raises(function() g:add(nn.Linear(2, 2)) end, 'has no inputs')
  t.raises(function() g:add(nn.Linear(2, 2), x, x) end, 'takes one input, got 2')
  t.raises(function() g:add(nn.Concat(), x) end, 'takes at least 2 inputs, got 1')
  t.raises(function() g:input('x') end, "the name 'x' is taken")
  local a = g:add(nn.Linear(4, 2, {name = 'a'}), x)
  local b = g:add(nn.Linear(4, 3, {name = 'b'}), x)
  g:output(a)
  t.raises(function() g:output_shape{1, 4} end, "node 'b' (Linear) leads to no output")
  local function joined(join)
    local h = nn.Graph{name = 'h'}
    local hx = h:input('x')
    h:output(h:add(join, h:add(nn.Linear(4, 2, {name = 'a'}), hx), h:add(nn.Linear(4, 3, {name = 'b'}), hx)))
    return h
  end
  t.raises(function() joined(nn.Concat{dim = 3, name = 'cat'}):output_shape{1, 4} end,
           "node 'cat' (Concat) of 'h' (Graph)")
  t.raises(function() joined(nn.Add()):output_shape{1, 4} end, 'input 2 is 1x3 but input 1 is 1x2')
  t.raises(function() joined(nn.Add()):forward(T.randn{1, 4}) end, 'input 2 is 1x3')
  t.raises(function()
    nn.Graph{inputs = {'x'}, {nn.ReLU{name = 'p'}, 'q'}, {nn.ReLU{name = 'q'}, 'p'}, outputs = {'p'}}
  end, "nodes 'p', 'q' feed each other in a cycle")
  t.raises(function() nn.Graph{inputs = {'x'}, outputs = {'x'}, {nn.ReLU(), 3}} end, 'input 1 must be a name')
  t.raises(function() nn.Graph{inputz = {}} end, "unknown option 'inputz'")
  t.raises(function() nn.Concat(1) end, 'dimension 1 is the batch')
  t.raises(function() nn.Narrow(2, 0, 1) end, 'start must be a positive integer')
  t.raises(function() nn.Narrow(2, 4, 2):output_shape{1, 4} end, 'indices 4..5 of dimension 2')
  t.raises(function() nn.Reshape(5):output_shape{2, 4} end, 'cannot be shaped to Nx5')
  t.raises(function() nn.Reshape() end, 'sizes of a sample are missing')
  t.raises(function() nn.Sequential{nn.Add()}:output_shape{1, 2} end, 'joins several inputs')
  t.raises(function() nn.ReLU():input('x') end, 'a Graph expected, got a ReLU layer')
  local two = nn.Graph{inputs = {'a', 'b'}, {nn.Add{name = 's'}, 'a', 'b'}, outputs = {'s'}}
  t.raises(function() T.Engine{net = two, optim = T.optim.SGD{lr = 0.1}}:step(batch(4, 1)) end, 'needs one of each')
end)


t.test('LSTM and GRU: shapes, states as graph inputs, training a sequence classifier', function()
  local lstm = nn.LSTM(28, 16, {layers = 2})
  t.eq(lstm:kind(), 'LSTM')
  t.eq(lstm:output_shape{4, 28, 28}, {4, 28, 16})
  t.eq(nn.GRU(28, 16, {output = 'last'}):output_shape{4, 28, 28}, {4, 16})
  local names = {}
  for name in pairs(lstm:parameters()) do names[#names + 1] = name end
  table.sort(names)
  t.eq(names, {'bias_hh_l0', 'bias_hh_l1', 'bias_ih_l0', 'bias_ih_l1', 'weight_hh_l0', 'weight_hh_l1',
               'weight_ih_l0', 'weight_ih_l1'})
  -- Initial states as inputs of a graph; zero states are the default.
  local g = nn.Graph()
  for _, name in ipairs{'x', 'h0', 'c0'} do g:input(name) end
  g:output(g:add(nn.LSTM(3, 4, {output = 'last', name = 'cell'}), 'x', 'h0', 'c0'))
  local x = T.randn({2, 5, 3}, 1)
  local with = g:forward{x, T.zeros{2, 1, 4}, T.zeros{2, 1, 4}}[1]:to_flat()
  local alone = g:children()[1]:forward(x):to_flat()
  for i = 1, #alone do t.near(with[i], alone[i], 0) end
  -- An image as 28 rows of 28 pixels: Reshape, LSTM, the last state, a classifier; it learns.
  local net = nn.Sequential{nn.Reshape(8, 8), nn.GRU(8, 12, {output = 'last'}), nn.Linear(12, 3)}
  local e = T.Engine{net = net, optim = T.optim.Adam{lr = 0.01}, devices = T.devices('cpu', 1, {threads = 1})}
  local first, last
  for step = 1, 30 do
    local r = e:step(batch(16, step % 3))
    first = first or r.loss
    last = r.loss
  end
  t.ok(last < first * 0.5, ('loss %g -> %g'):format(first, last))
  t.raises(function() nn.LSTM(0, 4) end, 'input_size must be a positive integer')
  t.raises(function() nn.LSTM(3, 4, {output = 'all'}) end, "option 'output' must be one of 'sequence', 'last'")
  t.raises(function() nn.LSTM(3, 4):output_shape{2, 3} end, 'N x steps x 3 (batch first), got 2x3')
  t.raises(function() g:forward{x, T.zeros{2, 2, 4}, T.zeros{2, 1, 4}} end, 'initial hidden state h0 must be 2x1x4')
end)

t.test('Softmax, LogSoftmax and LayerNorm from Lua', function()
  local p = nn.Softmax(2):forward(T.tensor{{0, math.log(3)}}):to_flat()
  t.near(p[1], 0.25, 1e-6)
  t.near(p[2], 0.75, 1e-6)
  local lp = nn.LogSoftmax{dim = -1}:forward(T.tensor{{0, math.log(3)}}):to_flat()
  t.near(lp[2], math.log(0.75), 1e-6)
  local norm = nn.LayerNorm({2, 2}, {eps = 1e-6, name = 'ln'})
  t.eq(norm:name(), 'ln')
  local y = norm:forward(T.tensor{{{1, 2}, {3, 4}}}):to_flat()
  local s = math.sqrt(1.25 + 1e-6)
  t.near(y[1], -1.5 / s, 1e-5)
  t.near(y[4], 1.5 / s, 1e-5)
  -- A classifier with a LayerNorm trains (the parameters get gradients through the engine).
  local net = nn.Sequential{nn.Flatten(), nn.Linear(64, 16), nn.LayerNorm(16), nn.ReLU(), nn.Linear(16, 3)}
  local e = T.Engine{net = net, optim = T.optim.Adam{lr = 0.01}, devices = T.devices('cpu', 1, {threads = 1})}
  local first, last
  for step = 1, 20 do
    last = e:step(batch(16, step % 3)).loss
    first = first or last
  end
  t.ok(last < first * 0.5, ('loss %g -> %g'):format(first, last))
  t.raises(function() nn.Softmax(1) end, 'dimension 1 is the batch')
  t.raises(function() nn.Softmax(0) end, 'dim must be 2 or more')
  t.raises(function() nn.Softmax(4):output_shape{2, 3} end, 'has no dimension 4')
  t.raises(function() nn.LayerNorm(5):output_shape{2, 4} end, 'does not end in 5')
  t.raises(function() nn.LayerNorm({}) end, 'normalized_shape must be a size or a list')
  t.raises(function() nn.LayerNorm(4, {eps = 0}) end, "option 'eps' must be a positive number")
end)
