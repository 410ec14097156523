-- nn.Lua: a layer written in Lua trains in T.Engine like the built-in layer it re-implements,
-- on one device, across pipeline stages and groups (its code then runs on the stages' worker
-- threads), and its mistakes are named.
local t = require 'tandem.test'
local T = require 'tandem'
local nn = T.nn
local batch = dofile('tests/lua/support.lua').toy_batch

-- y = x W^T + b, as nn.Linear computes it, in Lua's tensor math.
local function lua_linear(weight, bias, name)
  return nn.Lua{
    name = name,
    parameters = {weight = weight, bias = bias},
    output_shape = function(shape) return {shape[1], weight:shape()[1]} end,
    forward = function(p, x) return x:matmul(p.weight:transpose(1, 2)) + p.bias end,
    backward = function(p, x, dy)
      return dy:matmul(p.weight), {weight = dy:transpose(1, 2):matmul(x), bias = dy:sum(1)}
    end,
  }
end

-- tanh, keeping its output for backward (forward's second result).
local function lua_tanh()
  return nn.Lua{
    name = 'tanh_in_lua',
    forward = function(_, x)
      local y = x:tanh()
      return y, {y}
    end,
    backward = function(_, _, dy, saved)
      local y = saved[1]
      return dy * (1 - y * y)
    end,
  }
end

-- The toy task's net with its middle layers in Lua (or built in), from one seed's weights.
local function build(in_lua)
  local first = nn.Linear(64, 16, {name = 'first'})
  first:initialize(3)
  local w, b = first:parameters().weight, first:parameters().bias
  local middle = nn.Linear(64, 16, {name = 'middle'})
  middle:parameters().weight:copy(w)
  middle:parameters().bias:copy(b)
  return nn.Sequential{
    nn.Flatten(),
    in_lua and lua_linear(w, b, 'middle') or middle,
    in_lua and lua_tanh() or nn.Tanh(),
    nn.Linear(16, 3, {name = 'head'}),
  }
end

local function train(net, devices, parallel)
  net:initialize(7)
  local e = T.Engine{net = net, optim = T.optim.SGD{lr = 0.1, momentum = 0.9}, devices = devices,
                     parallel = parallel}
  local losses = {}
  for step = 1, 5 do losses[step] = e:step(batch(16, step)).loss end
  return losses
end

local function expect_same(a, b, tolerance)
  for name, p in pairs(a:parameters()) do
    local want, got = p:to_flat(), b:parameters()[name]:to_flat()
    for i = 1, #want do t.near(got[i], want[i], tolerance, name) end
  end
end

t.test('a Linear and a Tanh written in Lua train as the built-in ones do', function()
  local built_in, in_lua = build(false), build(true)
  local devices = function() return T.devices('cpu', 1, {threads = 1}) end
  local e1 = T.Engine{net = built_in, optim = T.optim.SGD{lr = 0.1, momentum = 0.9}, devices = devices()}
  local e2 = T.Engine{net = in_lua, optim = T.optim.SGD{lr = 0.1, momentum = 0.9}, devices = devices()}
  -- The engines initialised both nets from one seed; a Lua layer keeps its own values, so the
  -- built-in twin takes them.
  for name, p in pairs(in_lua:children()[2]:parameters()) do built_in:children()[2]:parameters()[name]:copy(p) end
  for step = 1, 5 do
    local images, labels = batch(16, step)
    t.near(e2:step(images, labels).loss, e1:step(images, labels).loss, 1e-5, 'step ' .. step)
  end
  expect_same(built_in:children()[2], in_lua:children()[2], 1e-5)
  expect_same(built_in:children()[4], in_lua:children()[4], 1e-5)
end)

t.test('a Lua layer in a pipeline stage and in several groups trains like one device', function()
  local one, split = build(true), build(true)
  local l1 = train(one, T.devices('cpu', 1, {threads = 1}))
  local l2 = train(split, T.devices('cpu', 4, {threads = 1}),
                   {groups = 2, stages = 2, micro_batches = 2, split = {2}})
  for i = 1, #l1 do t.near(l2[i], l1[i], 1e-4, 'loss of step ' .. i) end
  expect_same(one:children()[2], split:children()[2], 1e-4)
end)

t.test('layer:forward and layer:backward run a Lua layer on the calling thread', function()
  local l = lua_tanh()
  local x = T.randn({2, 3}, 1)
  local y = l:forward(x, {mode = 'train'})
  t.near(y:to_flat()[1], math.tanh(x:to_flat()[1]), 1e-6)
  local dx = l:backward(x, T.ones{2, 3})
  t.near(dx:to_flat()[1], 1 - y:to_flat()[1] ^ 2, 1e-6)
  t.eq(tostring(l):match('^Lua'), 'Lua')
end)

t.test('a Lua layer\'s mistakes name it', function()
  local x = T.randn({2, 3}, 1)
  local function layer(spec)
    spec.name = spec.name or 'mine'
    spec.forward = spec.forward or function(_, x_) return x_ end
    spec.backward = spec.backward or function(_, _, dy) return dy end
    return nn.Lua(spec)
  end
  local wrong_dx = layer{backward = function() return T.zeros{5} end}
  wrong_dx:forward(x, {mode = 'train'})
  t.raises(function() wrong_dx:backward(x, T.ones{2, 3}) end,
           "'mine' (Lua): backward returned dx of shape 5, the input's is 2x3")
  t.raises(function() layer{forward = function() error('no such thing') end}:forward(x) end,
           {"'mine' (Lua): its forward function failed:", 'no such thing'})
  t.raises(function() layer{forward = function() return 42 end}:forward(x) end,
           "'mine' (Lua): forward's result must be an f32 tensor, got number")
  t.raises(function() layer{output_shape = function() return {2, 4} end}:forward(x) end,
           "'mine' (Lua): forward returned 2x3, its output_shape is 2x4 for input 2x3")
  t.raises(function() layer{output_shape = function() return {7} end}:output_shape{2, 3} end,
           'the batch (first) size must stay 2')
  local p = layer{parameters = {w = T.ones{3}}, backward = function(_, _, dy) return dy, {v = T.ones{3}} end}
  p:forward(x, {mode = 'train'})
  t.raises(function() p:backward(x, T.ones{2, 3}) end, "backward gave a gradient for 'v', which is not one of its parameters")
  t.raises(function() nn.Lua{forward = 1, backward = function() end} end, "nn.Lua: option 'forward' must be a function, got 1")
  t.raises(function() nn.Lua{forward = print, backward = print, parameters = {w = 1}} end,
           "nn.Lua: parameter 'w' must be an f32 tensor, got number")
  t.raises(function() nn.Lua{forward = print, backward = print, speed = 1} end, "unknown option 'speed'")
  t.raises(function() nn.Lua(5) end, "bad argument #1 to 'nn.Lua'")
end)

t.test('a Lua layer says where it cannot run instead of waiting', function()
  -- The planner's measured costs time layers on a device's worker without lending the Lua
  -- state: the Lua layer says so.
  local net = nn.Sequential{nn.Flatten(), lua_tanh(), nn.Linear(64, 3)}
  t.raises(function()
    T.plan.search{net = net, sample = {1, 8, 8}, batch = 8, iterations = 1, warmup = 0,
                  topology = T.plan.topology('cpu', {devices = 1, threads = 1, memory = '1GB'})}
  end, 'runs Lua code, which a worker thread can run only during')
end)
