-- Tensor math and backward from Lua (issue 18): the operations against PyTorch's values
-- (tests/torch/cases_tensor_math.py), Lua's 1-based and negative dimensions, the errors, and
-- layer:backward / layer:gradients against finite differences and the matrix formulas.
local T = require 'tandem'
local t = require 'tandem.test'
local nn = T.nn

local F = assert(T.load('tests/torch/fixtures/tensor_math.safetensors'))

local function close(actual, expected, what, tol)
  t.eq(actual:shape(), expected:shape(), what .. ': shape')
  t.near(actual:to_flat(), expected:to_flat(), tol or 1e-5, what)
end

t.test('arithmetic operators, with tensors or numbers on either side', function()
  local a, b, pos = F.a, F.b, F.pos
  close(a + b, F.add, 'a + b')
  close(a - b, F.sub, 'a - b')
  close(a * b, F.mul, 'a * b')
  close(a / pos, F.div, 'a / pos', 1e-4)
  close(a * 2.5, F.mul_scalar, 'a * 2.5')
  close(1.5 - a, F.rsub_scalar, '1.5 - a')
  close(2 / pos, F.rdiv_scalar, '2 / pos', 1e-4)
  close(-a, F.neg, '-a')
  t.eq((T.tensor{1, 2} + 1):to_flat(), {2, 3})
  t.eq((3 * T.tensor{1, 2}):to_flat(), {3, 6})
end)

t.test('broadcasting over trailing dimensions, as PyTorch', function()
  close(F.a + F.row, F.add_row, 'a (2x3x4) + row (4)')
  close(F.a * F.col, F.mul_col, 'a (2x3x4) * col (3x1)')
  close(F.col - F.row, F.sub_col_row, 'col (3x1) - row (4)')
  t.eq((T.tensor{{1, 2}, {3, 4}} + T.tensor{10, 20}):to_table(), {{11, 22}, {13, 24}})
  t.eq((T.tensor{{1}, {2}} * T.tensor{1, 10, 100}):to_table(), {{1, 10, 100}, {2, 20, 200}})
end)

t.test('unary functions and pow', function()
  local a, pos = F.a, F.pos
  close(a:exp(), F.exp, 'exp')
  close(pos:log(), F.log, 'log')
  close(a:tanh(), F.tanh, 'tanh')
  close(a:sigmoid(), F.sigmoid, 'sigmoid')
  close(a:abs(), F.abs, 'abs')
  close(pos:sqrt(), F.sqrt, 'sqrt')
  close(a:neg(), F.neg, 'neg')
  close(pos:pow(1.7), F.pow, 'pow(1.7)')
  close(a:pow(2), F.square, 'pow(2)')
  t.eq(T.tensor{-1, 4}:abs():sqrt():to_flat(), {1, 2})
end)

t.test('matmul: matrices, batches, a shared matrix', function()
  close(F.m1:matmul(F.m2), F.matmul, '3x5 @ 5x4')
  close(F.bm1:matmul(F.bm2), F.bmm, '2x3x5 @ 2x5x4')
  close(F.bm1:matmul(F.m2), F.bmm_shared, '2x3x5 @ 5x4')
  t.eq(T.tensor{{1, 2}, {3, 4}}:matmul(T.tensor{{5, 6}, {7, 8}}):to_table(), {{19, 22}, {43, 50}})
end)

t.test('sum and mean along a dimension (1-based, negative from the end) or whole', function()
  local a = F.a
  close(a:sum(2), F.sum1, 'sum(2)')
  close(a:sum(-2), F.sum1, 'sum(-2)')
  close(a:mean(3), F.mean2, 'mean(3)')
  close(a:mean(-1), F.mean2, 'mean(-1)')
  close(a:sum(1, {keepdim = true}), F.sum0_keep, 'sum(1, keepdim)')
  t.eq(a:sum(1, {keepdim = true}):shape(), {1, 3, 4})
  t.eq(type(a:sum()), 'number')
  t.near(a:sum(), F.sum_all:to_flat()[1], 1e-5)
  t.near(a:mean(), F.mean_all:to_flat()[1], 1e-6)
  t.eq(T.tensor{{1, 2}, {3, 4}}:sum(1):to_flat(), {4, 6})
  t.eq(T.tensor{{1, 2}, {3, 4}}:sum(2):to_flat(), {3, 7})
end)

t.test('max and argmax give 1-based indices', function()
  local values, indices = F.a:max(2)
  close(values, F.max1_values, 'max(2) values')
  t.eq(indices:dtype(), 'i32')
  local expected = {}
  for i, v in ipairs(F.max1_indices:to_flat()) do expected[i] = v + 1 end
  t.eq(indices:to_flat(), expected)
  local argmax = {}
  for i, v in ipairs(F.argmax2:to_flat()) do argmax[i] = v + 1 end
  t.eq(F.a:argmax(3):to_flat(), argmax)
  t.eq(F.a:argmax(-1):to_flat(), argmax)
  local kept = F.a:max(2, {keepdim = true})
  t.eq(kept:shape(), {2, 1, 4})
  local m = T.tensor{{1, 9, 3}, {7, 2, 7}}
  local v, i = m:max(2)
  t.eq(v:to_flat(), {9, 7})
  t.eq(i:to_flat(), {2, 1}, 'the first of equal values')
  local best, at = m:max()
  t.eq({best, at}, {9, 2})
  t.eq(m:argmax(), 2)
  t.eq(m:argmax(1):to_flat(), {2, 1, 2})
end)

t.test('transpose, reshape, narrow, T.cat', function()
  local a = F.a
  close(a:transpose(1, 3), F.transpose02, 'transpose(1, 3)')
  close(a:transpose(-1, 1), F.transpose02, 'transpose(-1, 1)')
  close(a:narrow(2, 2, 2), F.narrow1, 'narrow(2, 2, 2)')
  close(T.cat({a, F.b:narrow(2, 1, 2)}, 2), F.cat1, 'cat dim 2')
  close(T.cat({a, F.b, a}, -1), F.cat2, 'cat dim -1')
  local m = T.tensor{{1, 2, 3}, {4, 5, 6}}
  t.eq(m:transpose(1, 2):to_table(), {{1, 4}, {2, 5}, {3, 6}})
  t.eq(m:narrow(2, 3, 1):to_table(), {{3}, {6}})
  t.eq(m:narrow(1, 2, 0):shape(), {0, 3})
  t.eq(T.cat({m, m}, 1):shape(), {4, 3})
  t.eq(m:reshape{3, 2}:transpose(1, 2):to_table(), {{1, 3, 5}, {2, 4, 6}})
  local n = m:narrow(1, 1, 1)
  n:fill(0)
  t.eq(m:to_flat()[1], 1, 'narrow copies')
end)

t.test('math on a CPU device stays on that device', function()
  local d = T.devices('cpu', 2, {memory = '16MB', threads = 1})
  local x = T.tensor{{1, 2}, {3, 4}}:to(d[1])
  local y = (x * x + 1):exp():log()
  t.eq(y:device_name(), 'cpu:0')
  t.near(y:to_flat(), {2, 5, 10, 17}, 1e-5)
  t.eq(x:matmul(x):sum(1):device_name(), 'cpu:0')
  t.raises(function() local _ = x + T.tensor{{1, 2}, {3, 4}}:to(d[2]) end,
           {'add: the operands are on different devices', 'cpu:0', 'cpu:1'})
end)

t.test('wrong inputs: clear errors naming the function, the argument and the shapes', function()
  local a, b = T.zeros{2, 3}, T.zeros{4, 3}
  t.raises(function() local _ = a + b end, 'add: shapes 2x3 and 4x3 do not broadcast')
  t.raises(function() local _ = a * T.zeros{3, 2} end, 'mul: shapes 2x3 and 3x2 do not broadcast')
  t.raises(function() local _ = a + {} end,
           "bad argument #2 to '__add' (tandem.Tensor or number expected, got table)")
  t.raises(function() local _ = 'x' - a end, 'tandem.Tensor or number expected, got string')
  t.raises(function() local _ = a:matmul(a) end, 'matmul: the inner dimensions differ: 2x3 and 2x3')
  t.raises(function() local _ = a:sum(3) end,
           "bad argument #1 to 'sum' (dimension 3 out of range for Tensor(2x3, f32, host) (rank 2: 1 to 2, or -2 to -1 from the end))")
  t.raises(function() local _ = a:mean(0) end, 'dimension 0 out of range')
  t.raises(function() local _ = a:max(-3) end, 'dimension -3 out of range')
  t.raises(function() local _ = a:transpose(1, 5) end, "bad argument #2 to 'transpose' (dimension 5")
  t.raises(function() local _ = a:sum(1.5) end, 'integer expected, got 1.5')
  t.raises(function() local _ = a:sum(1, {keep = true}) end, "sum: unknown option 'keep' (known: keepdim)")
  t.raises(function() local _ = a:narrow(2, 3, 2) end,
           "bad argument #3 to 'narrow' (length 2 from 3 runs past dimension 2 of Tensor(2x3, f32, host) (size 3))")
  t.raises(function() local _ = a:narrow(2, 0, 1) end, 'start 0 out of range for dimension 2')
  t.raises(function() local _ = T.cat({a, b:transpose(1, 2)}, 1) end,
           'cat: shapes 2x3 and 3x4 differ outside the dimension they are joined along')
  t.raises(function() local _ = T.cat({a, 'b'}, 1) end, 'entry 2 is a string, expected a tandem.Tensor')
  t.raises(function() local _ = T.cat({}, 1) end, 'the list of tensors is empty')
  t.raises(function() local _ = T.cat({a}) end, "bad argument #2 to 'cat' (integer expected, got no value)")
  t.raises(function() local _ = T.zeros{0}:max() end, 'max: Tensor(0, f32, host) is empty')
  t.raises(function() local _ = T.tensor({}, {2, 0}):max(2) end, 'is empty')
  local labels = T.tensor({1, 2}, nil, {dtype = 'i32'})
  t.raises(function() local _ = labels:exp() end,
           "exp: argument 'x' must be an f32 tensor, got Tensor(2, i32, host)")
  t.raises(function() local _ = T.tensor{1, 2} + labels end, "add: argument 'right operand' must be an f32")
  t.raises(function() local _ = T.tensor({5}, {}):sum(1) end, 'has no dimensions')
  local freed = T.zeros{2}
  freed:free()
  t.raises(function() local _ = freed + 1 end, 'tensor was freed')
end)

-- L = sum(layer(x) * r): dL/dy = r. Returns L for the layer's current parameters.
local function loss(layer, x, r, mode)
  return (layer:forward(x, {mode = mode}) * r):sum()
end

-- Checks dx and every parameter gradient of one backward against central differences of L,
-- on `count` elements of each tensor (relative tolerance `tol`, float32 forward). The
-- differences use forwards in `mode` (default eval): 'train' for batch norm's batch statistics.
local function check_finite_differences(layer, x, count, tol, mode)
  layer:zero_grad()
  local y = layer:forward(x, {mode = 'train'})
  local r = T.randn(y:shape(), 5)
  local dx = layer:backward(x, r)
  t.eq(dx:shape(), x:shape(), 'dx has the shape of x')
  local eps = 1e-2
  local function probe(what, target, analytic)
    local values = target:to_flat()
    local grads = analytic:to_flat()
    local step = math.max(1, math.floor(#values / count))
    for i = 1, #values, step do
      local keep = values[i]
      values[i] = keep + eps
      target:copy(values)
      local plus = loss(layer, x, r, mode)
      values[i] = keep - eps
      target:copy(values)
      local minus = loss(layer, x, r, mode)
      values[i] = keep
      target:copy(values)
      local numeric = (plus - minus) / (2 * eps)
      local scale = math.max(1, math.abs(numeric), math.abs(grads[i]))
      t.ok(math.abs(numeric - grads[i]) <= tol * scale,
           ('%s[%d]: backward %g, finite differences %g'):format(what, i, grads[i], numeric))
    end
  end
  probe('x', x, dx)
  local gradients = layer:gradients()
  for name, p in pairs(layer:parameters()) do probe(name, p, gradients[name]) end
end

t.test('layer:backward matches finite differences: Linear, Conv2d, Sequentials', function()
  check_finite_differences(nn.Linear(4, 3), T.randn({5, 4}, 1), 12, 1e-2)
  check_finite_differences(nn.Conv2d(2, 3, 3, {pad = 1}), T.randn({2, 2, 5, 5}, 2), 12, 1e-2)
  local net = nn.Sequential{nn.Conv2d(1, 2, 3), nn.Tanh(), nn.Flatten(), nn.Linear(2 * 3 * 3, 3)}
  check_finite_differences(net, T.randn({2, 1, 5, 5}, 3), 10, 2e-2)
  local normed = nn.Sequential{nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Tanh(), nn.Flatten(),
                               nn.Linear(2 * 3 * 3, 2)}
  check_finite_differences(normed, T.randn({3, 1, 5, 5}, 4), 10, 2e-2, 'train')
end)

t.test("Linear's backward is the matrix formulas: dx = dy W, dW = dy^T x, db = sum dy", function()
  local fc = nn.Linear(4, 3)
  local x, dy = T.randn({5, 4}, 1), T.randn({5, 3}, 2)
  fc:forward(x, {mode = 'train'})
  local dx = fc:backward(x, dy)
  local w = fc:parameters().weight
  close(dx, dy:matmul(w), 'dx')
  local g = fc:gradients()
  close(g.weight, dy:transpose(1, 2):matmul(x), 'dW')
  close(g.bias, dy:sum(1), 'db')
end)

t.test('gradients: zero at first, added by each backward, settable, zeroed', function()
  local net = nn.Sequential{nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)}
  local g = net:gradients()
  t.eq(#g['fc1.weight']:shape(), 2)
  for name, grad in pairs(g) do t.eq(grad:abs():sum(), 0, name .. ' starts at zero') end
  local x, dy = T.randn({6, 3}, 1), T.randn({6, 2}, 2)
  net:forward(x, {mode = 'train'})
  net:backward(x, dy)
  local once = net:gradients()['fc2.weight']:to_flat()
  net:forward(x, {mode = 'train'})
  net:backward(x, dy)
  local twice = net:gradients()['fc2.weight']:to_flat()
  for i = 1, #once do t.near(twice[i], 2 * once[i], 1e-5) end
  g['fc2.bias']:fill(3)  -- the tensors share the gradients' memory
  t.eq(net:gradients()['fc2.bias']:to_flat(), {3, 3})
  net:zero_grad()
  t.eq(net:gradients()['fc2.weight']:abs():sum(), 0)
  t.eq(net:get(3):gradients().bias:to_flat(), {0, 0}, "a layer's own names")
end)

t.test('backward needs the training forward of the same x', function()
  local fc = nn.Linear(3, 2, {name = 'head'})
  local x, dy = T.randn({4, 3}, 1), T.zeros{4, 2}
  t.raises(function() fc:backward(x, dy) end,
           "layer 'head' (Linear): backward without a pending training forward")
  fc:forward(x)
  t.raises(function() fc:backward(x, dy) end, 'backward without a pending training forward')
  fc:forward(x, {mode = 'train'})
  t.raises(function() fc:backward(x:clone(), dy) end,
           {"bad argument #1 to 'backward' (x is not the input of layer 'head' (Linear)'s last training forward",
            'pass the same tensor'})
  t.raises(function() fc:backward(x, T.zeros{4, 3}) end,
           "bad argument #2 to 'backward' (dy must be an f32 tensor of the output's shape (4x2) on x's device (host), got Tensor(4x3, f32, host))")
  t.raises(function() fc:backward(x, {}) end, 'tandem.Tensor expected, got table')
  t.eq(fc:backward(x, dy):shape(), {4, 3}, 'the pending forward survived the bad calls')
  t.raises(function() fc:backward(x, dy) end, 'backward without a pending training forward')
  -- A net's forward is its own: its layers have none pending.
  local net = nn.Sequential{nn.Linear(3, 2)}
  net:forward(x, {mode = 'train'})
  t.raises(function() net:get(1):backward(x, dy) end, "layer 'fc1' (Linear): backward without")
  t.eq(net:backward(x, dy):shape(), {4, 3})
end)

t.test('backward of dropout uses the mask of its forward', function()
  local drop = nn.Dropout(0.5)
  local x = T.ones{4, 50}
  local y = drop:forward(x, {mode = 'train', seed = 3})
  local dx = drop:backward(x, T.ones{4, 50})
  t.eq(dx:to_flat(), y:to_flat(), 'dx = mask * 2 = y for x = 1, dy = 1')
end)

