-- Layers from Lua: constructors, names, parameters, shapes, forward, summaries.
local T = require 'tandem'
local t = require 'tandem.test'
local nn = T.nn

local function shapes(params)
  local out = {}
  for name, p in pairs(params) do out[name] = p:shape() end
  return out
end

t.test('Conv2d options reach the layer', function()
  local conv = nn.Conv2d(3, 8, {3, 5}, {stride = 2, pad = {1, 2}, name = 'c'})
  t.eq(conv:kind(), 'Conv2d')
  t.eq(conv:name(), 'c')
  t.eq(conv:options_text(), '3->8, 3x5, stride 2, pad 1x2')
  t.eq(shapes(conv:parameters()), {weight = {8, 3, 3, 5}, bias = {8}})
  t.eq(conv:output_shape{2, 3, 9, 9}, {2, 8, 5, 5})
  t.eq(conv:parameter_count(), 8 * 3 * 15 + 8)
  local grouped = nn.Conv2d(4, 8, 1, {groups = 2, bias = false, init = 'xavier'})
  t.eq(shapes(grouped:parameters()), {weight = {8, 2, 1, 1}})
  t.ok(grouped:options_text():find('groups 2', 1, true), grouped:options_text())
end)

t.test('other layer kinds', function()
  t.eq(shapes(nn.Linear(6, 4):parameters()), {weight = {4, 6}, bias = {4}})
  t.eq(shapes(nn.Linear(6, 4, {bias = false}):parameters()), {weight = {4, 6}})
  local bn = nn.BatchNorm2d(5, {eps = 1e-3, momentum = 0.2})
  t.eq(shapes(bn:parameters()), {weight = {5}, bias = {5}})
  t.eq(shapes(bn:buffers()), {running_mean = {5}, running_var = {5}})
  t.eq(nn.MaxPool2d(2):output_shape{1, 3, 8, 8}, {1, 3, 4, 4})
  t.eq(nn.MaxPool2d(3, {stride = 2, ceil = true}):output_shape{1, 1, 8, 8}, {1, 1, 4, 4})
  t.eq(nn.AvgPool2d(2, {stride = 1, pad = 1}):output_shape{1, 1, 4, 4}, {1, 1, 5, 5})
  t.eq(nn.GlobalAvgPool2d():output_shape{2, 7, 5, 5}, {2, 7, 1, 1})
  t.eq(nn.LRN{size = 3}:output_shape{1, 4, 2, 2}, {1, 4, 2, 2})
  t.eq(nn.Flatten():output_shape{2, 3, 4, 5}, {2, 60})
  t.eq(nn.Dropout():options_text(), 'p = 0.5')
  t.eq(nn.Dropout(0.25):kind(), 'Dropout')
  t.eq(nn.ReLU():kind(), 'ReLU')
  t.near(nn.CrossEntropy{label_smoothing = 0.1}:label_smoothing(), 0.1, 1e-7)
end)

t.test('element-wise activations: kinds, options and values', function()
  local x = T.tensor({-2, -0.5, 0, 1}, {2, 2})
  local function values(layer) return layer:forward(x):to_flat() end
  t.near(values(nn.Sigmoid()), {0.119203, 0.377541, 0.5, 0.731059}, 1e-6)
  t.near(values(nn.Tanh()), {-0.964028, -0.462117, 0, 0.761594}, 1e-6)
  -- PyTorch's values for the exact GELU and its tanh approximation.
  t.near(values(nn.GELU()), {-0.0455, -0.154269, 0, 0.841345}, 1e-6)
  t.near(values(nn.GELU{approximate = 'tanh'}), {-0.045402, -0.154286, 0, 0.841192}, 1e-6)
  t.near(values(nn.GELU{approximate = 'none'}), values(nn.GELU()), 0)
  t.near(values(nn.LeakyReLU()), {-0.02, -0.005, 0, 1}, 1e-7)
  t.near(values(nn.LeakyReLU(0.2)), {-0.4, -0.1, 0, 1}, 1e-7)
  t.near(values(nn.LeakyReLU{negative_slope = 0.2}), {-0.4, -0.1, 0, 1}, 1e-7)
  t.eq({nn.Sigmoid():kind(), nn.Tanh():kind(), nn.GELU():kind(), nn.LeakyReLU():kind()},
       {'Sigmoid', 'Tanh', 'GELU', 'LeakyReLU'})
  t.eq(nn.LeakyReLU(0.2, {name = 'lk'}):name(), 'lk')
  t.eq(nn.Tanh{name = 'th'}:name(), 'th')
  local net = nn.Sequential{nn.Linear(4, 4), nn.GELU{approximate = 'tanh'}, nn.LeakyReLU(0.25),
                            nn.Sigmoid(), nn.GELU(), nn.Tanh()}
  local names = {}
  for i = 1, net:size() do names[i] = net:get(i):name() end
  t.eq(names, {'fc1', 'gelu1', 'leakyrelu1', 'sigmoid1', 'gelu2', 'tanh1'})
  local text = tostring(net)
  t.ok(text:find("gelu1%s+GELU%s+approximate = 'tanh'"), text)
  t.ok(text:find('leakyrelu1%s+LeakyReLU%s+negative_slope = 0.25'), text)
  t.ok(text:find("gelu2%s+GELU%s+approximate = 'none'"), text)
  local summary = tostring(net:summary{4})
  t.ok(summary:find('sigmoid1%s+Sigmoid'), summary)
  t.eq(net:output_shape{3, 4}, {3, 4})
  t.eq(nn.LeakyReLU():options_text(), 'negative_slope = 0.01')
end)

t.test('element-wise activations: bad options name the option', function()
  t.raises(function() nn.LeakyReLU('x') end,
           "bad argument #1 to 'nn.LeakyReLU' (negative_slope must be a finite number, got 'x')")
  t.raises(function() nn.LeakyReLU(1 / 0) end, 'negative_slope must be a finite number, got inf')
  t.raises(function() nn.LeakyReLU{negative_slope = 'x'} end,
           "nn.LeakyReLU: option 'negative_slope' must be a finite number, got 'x'")
  t.raises(function() nn.LeakyReLU(0.1, {negative_slope = 0.2}) end,
           'nn.LeakyReLU: negative_slope given twice')
  t.raises(function() nn.LeakyReLU{slope = 0.2} end,
           "nn.LeakyReLU: unknown option 'slope' (known: name, negative_slope)")
  t.raises(function() nn.GELU{approximate = 'fast'} end,
           "nn.GELU: option 'approximate' must be one of 'none', 'tanh', got 'fast'")
  t.raises(function() nn.GELU{approximate = true} end, "option 'approximate' must be one of")
  t.raises(function() nn.Sigmoid{slope = 1} end, "nn.Sigmoid: unknown option 'slope' (known: name)")
  t.raises(function() nn.Tanh(3) end, 'nn.Tanh: options table expected, got 3')
  t.raises(function() nn.GELU{name = 'a.b'} end,
           "nn.GELU: option 'name' must be a non-empty string without dots")
  t.raises(function() require('tandem.core').nn_activation('swish', 0) end,
           "unknown activation 'swish'")
end)

t.test('Sequential names its layers and nests parameters', function()
  local net = nn.Sequential{
    nn.Conv2d(1, 2, 3, {pad = 1}), nn.ReLU(), nn.Conv2d(2, 2, 3, {pad = 1, name = 'last'}),
    nn.Flatten(), nn.Linear(2 * 4 * 4, 3), name = 'net',
  }
  t.eq(net:name(), 'net')
  t.eq(net:size(), 5)
  local names = {}
  for i = 1, net:size() do names[i] = net:get(i):name() end
  t.eq(names, {'conv1', 'relu1', 'last', 'flatten1', 'fc1'})
  t.eq(#net:children(), 5)
  local p = shapes(net:parameters())
  t.eq(p['conv1.weight'], {2, 1, 3, 3})
  t.eq(p['last.bias'], {2})
  t.eq(p['fc1.weight'], {3, 32})
  t.eq(net:output_shape{2, 1, 4, 4}, {2, 3})
  t.eq(net:add(nn.ReLU()), net, 'add returns the net')
  t.eq(net:size(), 6)
end)

t.test('Residual branches and parameter names', function()
  local block = nn.Residual{body = {nn.Conv2d(2, 4, 3, {stride = 2, pad = 1}), nn.ReLU()},
                            shortcut = {nn.Conv2d(2, 4, 1, {stride = 2})}, name = 'b'}
  t.eq(block:kind(), 'Residual')
  t.eq(block:options_text(), 'projection shortcut')
  local net = nn.Sequential{block}
  local p = shapes(net:parameters())
  t.eq(p['b.body.conv1.weight'], {4, 2, 3, 3})
  t.eq(p['b.shortcut.conv1.weight'], {4, 2, 1, 1})
  t.eq(net:output_shape{1, 2, 8, 8}, {1, 4, 4, 4})
  local identity = nn.Residual{body = nn.Sequential{nn.ReLU()}}
  t.eq(identity:options_text(), 'identity shortcut')
  local x = T.tensor({-1, 2, -3, 4}, {1, 1, 2, 2})
  t.eq(identity:forward(x):to_flat(), {-1, 4, -3, 8}, 'relu(x) + x')
  t.raises(function() nn.Residual{body = {nn.Conv2d(1, 2, 1)}}:output_shape{1, 1, 2, 2} end,
           'Residual')
end)

t.test('forward computes what the layer says', function()
  local x = T.tensor{{-1, 2}, {3, -4}}
  t.eq(nn.ReLU():forward(x):to_table(), {{0, 2}, {3, 0}})
  local fc = nn.Linear(2, 3)
  fc:parameters().bias:copy{0.5, -0.5, 1}
  local w, b = fc:parameters().weight:to_table(), fc:parameters().bias:to_flat()
  local y = fc:forward(x):to_table()
  for n = 1, 2 do
    for o = 1, 3 do
      local expected = b[o]
      for i = 1, 2 do expected = expected + x:to_table()[n][i] * w[o][i] end
      t.near(y[n][o], expected, 1e-5)
    end
  end
end)

t.test('parameters share the layer memory; initialize is deterministic', function()
  local a, b = nn.Conv2d(2, 3, 3), nn.Conv2d(2, 3, 3)
  a:initialize(5)
  b:initialize(5)
  t.eq(a:parameters().weight:to_flat(), b:parameters().weight:to_flat())
  b:initialize(6)
  t.ok(a:parameters().weight:to_flat()[1] ~= b:parameters().weight:to_flat()[1])
  a:parameters().weight:fill(0.5)
  t.eq(a:parameters().weight:to_flat()[7], 0.5)
end)

t.test('dropout: identity in evaluation, seeded mask in training', function()
  local drop = nn.Dropout(0.5)
  local x = T.ones{4, 50}
  t.eq(drop:forward(x):to_flat(), x:to_flat())
  local y1 = drop:forward(x, {mode = 'train', seed = 3}):to_flat()
  local y2 = drop:forward(x, {mode = 'train', seed = 3}):to_flat()
  local y3 = drop:forward(x, {mode = 'train', seed = 4}):to_flat()
  t.eq(y1, y2)
  local zeros, twos, differ = 0, 0, false
  for i, v in ipairs(y1) do
    if v == 0 then zeros = zeros + 1 elseif v == 2 then twos = twos + 1 end
    differ = differ or v ~= y3[i]
  end
  t.eq(zeros + twos, 200)
  t.ok(zeros > 60 and zeros < 140, 'about half dropped: ' .. zeros)
  t.ok(differ, 'another seed, another mask')
end)

t.test('batch norm: training uses batch statistics, evaluation the running ones', function()
  local bn = nn.BatchNorm2d(1)
  local x = T.tensor({1, 2, 3, 4}, {4, 1, 1, 1})
  t.eq(bn:forward(x):to_flat(), bn:forward(x, {mode = 'eval'}):to_flat())
  local y = bn:forward(x, {mode = 'train'}):to_flat()
  t.near(y[1] + y[4], 0, 1e-5)
  t.near(bn:buffers().running_mean:to_flat()[1], 0.25, 1e-6)
end)

t.test('forward on a device moves the layer there', function()
  local d = T.devices('cpu', 1, {memory = '16MB', threads = 1})[1]
  local net = nn.Sequential{nn.Linear(3, 2), nn.ReLU()}
  local x = T.ones{2, 3}
  local host_y = net:forward(x):to_table()
  local y = net:forward(x:to(d))
  t.eq(y:device_name(), 'cpu:0')
  t.eq(net:parameters()['fc1.weight']:device_name(), 'cpu:0')
  t.near(y:to_table(), host_y, 1e-6)
  t.near(net:forward(x):to_table(), host_y, 1e-6)
  t.eq(net:parameters()['fc1.weight']:device_name(), 'host', 'and back')
end)

t.test('cross entropy sums', function()
  local loss = nn.CrossEntropy()
  local labels = T.tensor({0, 2}, nil, {dtype = 'i32'})
  local r = loss:forward(T.zeros{2, 3}, labels)
  t.near(r.loss, 2 * math.log(3), 1e-5)
  t.eq(r.count, 2)
  local sure = loss:forward(T.tensor{{9, 0, 0}, {0, 0, 9}}, labels)
  t.eq(sure.correct, 2)
  t.ok(sure.loss < 0.01)
  t.ok(tostring(loss):find('CrossEntropy', 1, true))
end)

t.test('memory estimate', function()
  local e = nn.Linear(10, 4):memory_estimate{8, 10}
  t.eq(e.parameter_bytes, (40 + 4) * 4)
  t.eq(e.output_bytes, 8 * 4 * 4)
  t.ok(e.saved_bytes >= 0)
end)

t.test('printing a layer and a net', function()
  t.eq(tostring(nn.Conv2d(1, 2, 3, {name = 'c'})),
       "Conv2d 'c' (1->2, 3x3, stride 1, pad 0), 20 parameters")
  local net = nn.Sequential{nn.Conv2d(1, 4, 3, {pad = 1}), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                            nn.Linear(4 * 14 * 14, 10)}
  local text = tostring(net)
  t.ok(text:find('Sequential: 5 entries, 7,890 parameters', 1, true), text)
  t.ok(text:find('conv1%s+Conv2d%s+1%->4, 3x3, stride 1, pad 1%s+40'), text)
  local s = net:summary{1, 28, 28}
  t.eq(s.parameters, 7890)
  t.eq(s.output_shape, {10})
  t.eq(#s.rows, 5)
  t.eq(s.rows[3].output_shape, {1, 4, 14, 14})
  local summary = tostring(s)
  t.ok(summary:find('pool1%s+MaxPool2d%s+2x2, stride 2%s+4x14x14%s+0'), summary)
  t.ok(summary:find('total: 7,890 parameters', 1, true), summary)
end)

t.test('printing a residual net shows both branches', function()
  local net = nn.Sequential{nn.Residual{body = {nn.Conv2d(2, 2, 3, {pad = 1})},
                                        shortcut = {nn.Conv2d(2, 2, 1)}}}
  local text = tostring(net:summary{2, 5, 5})
  t.ok(text:find('block1%s+Residual'), text)
  t.ok(text:find('  body.conv1%s+Conv2d'), text)
  t.ok(text:find('  shortcut.conv1%s+Conv2d'), text)
end)

t.test('the recipes\' nets build and count their parameters', function()
  local build = dofile('recipes/nets/resnet20.lua')
  local net, shape = build{}
  t.eq(net:summary(shape).parameters, 272474)
  build = dofile('recipes/nets/lenet5.lua')
  net, shape = build{}
  t.eq(net:summary(shape).output_shape, {10})
end)
