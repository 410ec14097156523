-- Every bound function given wrong types, nil, freed objects, wrong shapes or unknown options
-- raises a Lua error naming the problem; none crashes the process.
local T = require 'tandem'
local core = require 'tandem.core'
local t = require 'tandem.test'
local nn = T.nn

t.test('bad argument messages follow Lua', function()
  t.raises(function() T.tensor('x') end,
           "bad argument #1 to 'tensor' (table of numbers expected, got string)")
  t.raises(function() T.zeros() end, "bad argument #1 to 'zeros' (shape expected")
  t.raises(function() T.zeros{2, -1} end, 'shape entry 2 must be a non-negative integer, got -1')
  t.raises(function() T.zeros{2.5} end, 'shape entry 1 must be a non-negative integer, got 2.5')
  t.raises(function() T.zeros{2, n = 1} end, 'shape must be a plain list')
  t.raises(function() T.zeros{1e9, 1e9} end, 'has too many elements')
  t.raises(function() T.randn({2}, 'seed') end, "bad argument #2 to 'randn' (integer expected")
  local x = T.zeros{2, 3}
  t.raises(function() x:reshape('3x2') end, "bad argument #1 to 'reshape' (shape expected")
  t.raises(function() x:size(3) end, 'dimension 3 out of range')
  t.raises(function() x:to('cpu:0') end,
           "bad argument #1 to 'to' (tandem.Device expected, got string)")
  t.raises(function() x.shape(nil) end, 'tandem.Tensor expected, got nil')
  t.raises(function() x.shape({}) end, 'tandem.Tensor expected, got table')
  t.raises(function() x.shape(nn.ReLU()) end, 'tandem.Tensor expected, got tandem.Layer')
end)

t.test('errors carry the caller position', function()
  local message = t.raises(function() T.zeros('x') end, 'bad argument')
  t.ok(message:find('test_errors.lua:%d+:') ~= nil, message)
  message = t.raises(function() nn.Conv2d(1, 2, 3, {padd = 1}) end, 'unknown option')
  t.ok(message:find('test_errors.lua:%d+:') ~= nil, message)
end)

t.test('ragged and mistyped nested tables', function()
  t.raises(function() T.tensor{{1, 2}, {3}} end,
           'ragged nested table: entry [2] has 1 entries, expected 2')
  t.raises(function() T.tensor{{1, 2}, 3} end, 'ragged nested table: entry [2] is a number')
  t.raises(function() T.tensor{1, {2}} end, 'ragged nested table: entry [2] is a table')
  t.raises(function() T.tensor{{1, 'a'}} end, 'entry [1][2] is a string, expected a number')
  t.raises(function() T.tensor({1, 2, 3}, {2, 2}) end,
           'shape 2x2 holds 4 elements, the table has 3')
  local loop = {}
  loop[1] = loop
  t.raises(function() T.tensor(loop) end, 'nested deeper than 16 levels')
end)

t.test('layer constructors check their arguments', function()
  t.raises(function() nn.Conv2d(1, 32, 3, {padd = 1}) end,
           "nn.Conv2d: unknown option 'padd' (known: bias, groups, init, name, pad, stride)")
  t.raises(function() nn.Conv2d('1', 32, 3) end,
           "bad argument #1 to 'nn.Conv2d' (in_channels must be a positive integer, got '1')")
  t.raises(function() nn.Conv2d(1, 32) end, "bad argument #3 to 'nn.Conv2d' (kernel size must be")
  t.raises(function() nn.Conv2d(1, 32, {3}) end, 'or a pair {h, w} of them')
  t.raises(function() nn.Conv2d(1, 32, 3, {stride = 0}) end,
           "nn.Conv2d: option 'stride' must be a positive integer or a pair")
  t.raises(function() nn.Conv2d(1, 32, 3, {bias = 1}) end,
           "option 'bias' must be true or false, got 1")
  t.raises(function() nn.Conv2d(3, 32, 3, {groups = 2}) end,
           'option groups (2) must divide in_channels (3)')
  t.raises(function() nn.Conv2d(1, 2, 3, {init = 'lecun'}) end,
           "unknown option init 'lecun' (known:")
  t.raises(function() nn.Conv2d(1, 2, 3, 'pad') end, 'nn.Conv2d: options table expected, got')
  t.raises(function() nn.Linear(10) end, "bad argument #2 to 'nn.Linear' (out_features must be")
  t.raises(function() nn.Linear(2^40, 2^40) end, 'too many')
  t.raises(function() nn.BatchNorm2d(0) end, 'channels must be a positive integer, got 0')
  t.raises(function() nn.BatchNorm2d(4, {eps = -1}) end, "option 'eps' must be a positive number")
  t.raises(function() nn.BatchNorm2d(4, {momentum = 2}) end,
           "option 'momentum' must be a number in [0, 1)")
  t.raises(function() nn.MaxPool2d() end, "bad argument #1 to 'nn.MaxPool2d' (kernel size must be")
  t.raises(function() nn.MaxPool2d(2, {pad = 3}) end, 'MaxPool2d')
  t.raises(function() nn.AvgPool2d(2, {count_include_pad = 'yes'}) end,
           "option 'count_include_pad'")
  t.raises(function() nn.MaxPool2d(2, {count_include_pad = true}) end,
           "nn.MaxPool2d: unknown option 'count_include_pad' (known: ceil, name, pad, stride)")
  t.raises(function() nn.LRN{size = 4} end, 'LRN')
  t.raises(function() nn.LRN(5) end, 'nn.LRN: options table expected, got 5')
  t.raises(function() nn.Dropout(1) end, 'p must be a number in [0, 1), got 1')
  t.raises(function() nn.ReLU{name = 'a.b'} end,
           "option 'name' must be a non-empty string without dots")
  t.raises(function() nn.Flatten{nam = 'x'} end, "nn.Flatten: unknown option 'nam' (known: name)")
  t.raises(function() nn.CrossEntropy{label_smoothing = 1} end, "option 'label_smoothing'")
  t.raises(function() nn.CrossEntropy{smoothing = 0.1} end,
           "nn.CrossEntropy: unknown option 'smoothing' (known: label_smoothing)")
end)

t.test('containers check their entries', function()
  t.raises(function() nn.Sequential{nn.ReLU(), nn.ReLU} end,
           'nn.Sequential: entry 2 is function, expected a layer (a constructor: call it')
  t.raises(function() nn.Sequential{nn.ReLU(), 3} end, 'entry 2 is 3, expected a layer')
  t.raises(function() nn.Sequential{nn.ReLU(), nil, nn.ReLU()} end, 'entry 2 is nil')
  t.raises(function() nn.Sequential{layers = {}} end, "nn.Sequential: unknown option 'layers'")
  t.raises(function() nn.Sequential('x') end, "bad argument #1 to 'nn.Sequential'")
  t.raises(function() nn.Sequential{nn.ReLU{name = 'a'}, nn.ReLU{name = 'a'}} end,
           "two layers are named 'a'")
  local r = nn.ReLU()
  t.raises(function() nn.Sequential{r, r} end, 'is already in this container')
  t.raises(function() nn.Residual{} end, 'nn.Residual: the body is missing')
  t.raises(function() nn.Residual{body = nn.ReLU()} end,
           'nn.Residual: body must be a Sequential or a list of layers, got a ReLU layer')
  t.raises(function() nn.Residual{body = {nn.ReLU()}, shortcut = 3} end, 'shortcut must be')
  t.raises(function() nn.Residual{body = {nn.ReLU()}, short = {}} end,
           "nn.Residual: unknown option 'short' (known: body, name, shortcut)")
  t.raises(function() nn.Residual{body = {nn.Linear}} end, 'nn.Residual body: entry 1 is function')
end)

t.test('a net cannot contain itself', function()
  local a = nn.Sequential{nn.ReLU()}
  local b = nn.Sequential{a}
  t.raises(function() a:add(b) end, 'contains this Sequential')
  t.raises(function() a:add(a) end, 'contains this Sequential')
  local body = nn.Sequential{nn.ReLU()}
  local block = nn.Residual{body = body}
  t.raises(function() body:add(block) end, 'contains this Sequential')
end)

t.test('a layer belongs to one net, a net to one engine', function()
  local conv = nn.Conv2d(1, 2, 3)
  local a = nn.Sequential{conv, nn.ReLU()}
  -- Sharing a layer tied two nets' weights and names together.
  t.raises(function() nn.Sequential{conv} end, "layer 'conv1' (Conv2d) is already inside")
  t.raises(function() nn.Sequential{}:add(conv) end, 'a layer belongs to one net (layer:clone() makes a separate copy)')
  local copy = conv:clone()
  t.eq(copy:name(), 'conv1')
  local b = nn.Sequential{copy}
  t.eq(b:size(), 1)
  -- A refused layer is left as it was (its name too), and is free to join another net later.
  local free_relu = nn.ReLU({name = 'mine'})
  local named = nn.Sequential{nn.ReLU({name = 'mine'})}
  t.raises(function() named:add(free_relu) end, "two layers are named 'mine'")
  t.eq(nn.Sequential{free_relu}:size(), 1)
  -- A net trained by an engine: no second engine, no new layers, until it is freed.
  local net = nn.Sequential{nn.Flatten(), nn.Linear(4, 2)}
  local sgd = T.optim.SGD{lr = 0.1}
  local devices = T.devices('cpu', 1, {threads = 1})
  local e = T.Engine{net = net, optim = sgd, devices = devices}
  t.raises(function() T.Engine{net = net, optim = sgd, devices = devices} end, 'already trained by another engine')
  t.raises(function() net:add(nn.ReLU()) end, 'this net is trained by an engine')
  t.raises(function() T.Engine{net = nn.Sequential{net}, optim = sgd, devices = devices} end,
           'already trained by another engine')
  e:free()
  net:add(nn.ReLU())
  local again = T.Engine{net = net, optim = sgd, devices = devices}
  t.eq(again:net():size(), 3)
  again:free()
end)

t.test('layer methods check their arguments', function()
  local conv = nn.Conv2d(3, 4, 3)
  t.raises(function() conv:forward(T.zeros{1, 2, 5, 5}) end,
           {'input has 2 channels, weight expects 3', 'input 1x2x5x5'})
  t.raises(function() conv:forward({}) end,
           "bad argument #1 to 'forward' (tandem.Tensor expected, got table)")
  t.raises(function() conv:forward() end, 'tandem.Tensor expected, got no value')
  t.raises(function() conv:forward(T.zeros{1, 3, 5, 5}, {mode = 'training'}) end,
           "option 'mode' must be 'train' or 'eval', got 'training'")
  t.raises(function() conv:forward(T.zeros{1, 3, 5, 5}, {mdoe = 'train'}) end,
           "forward: unknown option 'mdoe' (known: mode, seed)")
  t.raises(function() conv:output_shape{1, 3} end, 'Conv2d')
  t.raises(function() conv:output_shape('x') end,
           "bad argument #1 to 'output_shape' (shape expected")
  t.raises(function() conv:add(nn.ReLU()) end, 'Sequential expected, got a Conv2d layer')
  t.raises(function() conv:size() end, 'Sequential expected, got a Conv2d layer')
  t.raises(function() conv.kind(T.zeros{1}) end, 'tandem.Layer expected, got tandem.Tensor')
  t.raises(function() conv:initialize('x') end, "bad argument #1 to 'initialize' (integer expected")
  local net = nn.Sequential{nn.ReLU()}
  t.raises(function() net:get(2) end, 'layer index must be in [1, 1], got 2')
  t.raises(function() net:get(0) end, 'layer index must be in [1, 1], got 0')
  t.raises(function() nn.Sequential{}:get(1) end, 'the Sequential is empty')
  t.raises(function() net:add('relu') end,
           "bad argument #1 to 'add' (tandem.Layer expected, got string)")
  t.raises(function() net:summary() end, 'sample shape expected')
  t.raises(function() nn.Sequential{nn.Conv2d(3, 4, 3)}:summary{1, 28, 28} end,
           {'input has 1 channels, weight expects 3', "in layer 1 'conv1' (Conv2d)"})
end)

t.test('freed layers and losses are refused', function()
  local layer = nn.ReLU()
  core.metatables.Layer.__gc(layer)  -- what a user could do by hand
  t.raises(function() layer:kind() end, 'layer was freed')
  t.raises(function() nn.Sequential{}:add(layer) end, 'layer was freed')
  t.eq(tostring(layer):match('^Layer%('), 'Layer(')
  local loss = nn.CrossEntropy()
  core.metatables.Loss.__gc(loss)
  t.raises(function() loss:forward(T.zeros{1, 2}, T.tensor({0}, nil, {dtype = 'i32'})) end,
           'loss was freed')
  t.raises(function() core.metatables.Tensor.__gc(nn.ReLU()) end, 'tandem.Tensor expected')
end)

t.test('the loss checks its inputs', function()
  local loss = nn.CrossEntropy()
  local logits = T.zeros{2, 3}
  t.raises(function() loss:forward(logits, T.tensor({0, 1})) end, 'labels I32')
  t.raises(function() loss:forward(logits, T.tensor({0, 1, 2}, nil, {dtype = 'i32'})) end,
           'disagree on the number of samples')
  t.raises(function() loss:forward(logits, T.tensor({0, 5}, nil, {dtype = 'i32'})) end, 'label')
  t.raises(function() loss:forward(logits) end,
           "bad argument #2 to 'forward' (tandem.Tensor expected")
end)

t.test('io and data argument errors', function()
  t.raises(function() T.save() end, "bad argument #1 to 'save' (string expected, got no value)")
  t.raises(function() T.save('/nonexistent/x.safetensors', {w = 3}) end,
           "entry 'w' is a number, expected a tensor")
  t.raises(function() T.save('/nonexistent/x.safetensors', {T.zeros{1}}) end,
           'tensor names must be strings')
  t.raises(function() T.save('/nonexistent/x.safetensors', {}, {a = {}}) end,
           'metadata must map strings')
  t.raises(function() T.load(3) end, "bad argument #1 to 'load' (string expected, got number)")
  t.raises(function() T.data.idx() end, "bad argument #1 to 'idx'")
  t.raises(function() T.data.mnist('a', 'b', {mean = 0, stdev = 1}) end,
           "T.data.mnist: unknown option 'stdev' (known: mean, std)")
  t.raises(function() T.data.epoch_order(-1, 1, 1) end, 'n must be in')
  t.raises(function() T.data.dataset(T.zeros{2, 3}, T.zeros{2}) end, 'dataset images must be')
end)

-- Every bound function and method, called with every kind of wrong value, either works or
-- raises an error with a message: a crash would end this test run.
t.test('values that were taken and misread are refused, naming the option', function()
  t.raises(function() T.Progress{total = 10, width = -5} end, "T.Progress: option 'width' must be a positive integer, got -5")
  t.raises(function() T.Progress{width = 10} end, 'T.Progress: option total is required')
  t.raises(function() T.parallel.share(1, -5) end,
           "bad argument #2 to 'T.parallel.share' (count must be a non-negative integer, got -5)")
  t.raises(function() T.parallel.share(0, 8) end, "bad argument #1 to 'T.parallel.share' (first must be a positive integer")
  t.raises(function() T.parallel.preferred_layout('gpu') end,
           "T.parallel.preferred_layout: kind must be 'cpu' or 'cuda' (a device's kind()), got 'gpu'")
  local net = nn.Sequential{nn.Flatten(), nn.Linear(4, 2)}
  local sgd = T.optim.SGD{lr = 0.1}
  t.raises(function() T.Engine{net = net, optim = sgd, trace = 'yes'} end,
           "T.Engine: option 'trace' must be true or false, got 'yes'")
  t.raises(function() T.Engine{net = net, optim = sgd, seed = 1.5} end,
           "T.Engine: option 'seed' must be a non-negative integer, got 1.5")
  t.raises(function() T.Engine{net = net, optim = sgd, devices = {'cpu'}} end,
           "T.Engine: option 'devices' must be a list of devices from T.devices, got a list whose entry 1 is 'cpu'")
  t.raises(function() nn.Conv2d(1, 2, 3):set_kernel_impl('cudnn2') end,
           "layer Conv2d: unknown kernel implementation 'cudnn2' (this build has: ")
  local conv = nn.Conv2d(1, 2, 3)
  conv:set_kernel_impl('reference')
  conv:set_kernel_impl()  -- back to each device's default
  t.raises(function() T.plan.machine{devices = 0} end, "T.plan.machine: option 'devices' must be an integer in [1, 256], got 0")
  t.raises(function() T.plan.machine{threads = -1} end, "option 'threads' must be an integer in [0, 1024]")
  local conv_net = nn.Sequential{nn.Conv2d(1, 4, 3, {pad = 1}), nn.ReLU(), nn.Flatten(), nn.Linear(256, 3)}
  local e = T.Engine{net = conv_net, optim = sgd, devices = T.devices('cpu', 1, {threads = 1})}
  local message = t.raises(function() e:prepare({8, 8}, 4) end, 'input must be N x C x H x W, got 4x8x8')
  t.ok(message:find('prepare: samples of shape 8x8 do not fit the net', 1, true), message)
  t.raises(function() e:prepare({1, 8, 8}, 0) end, "bad argument #2 to 'prepare' (batch must be at least 1)")
  e:prepare({1, 8, 8}, 4)
  t.raises(function() T.devices('cpu', 1, {memory = '0B'}) end, "T.devices: option 'memory' must be a size such as '512MB' or a byte count, above 0 (leave it out for none), got '0B'")
  t.raises(function() T.devices('cpu', 1, {threads = 1e9}) end, "T.devices: option 'threads' must be an integer in [0, 1024] (0: every core), got 1000000000")
  -- One set of layout names everywhere ('nhwc' was taken by some and read as channels_last
  -- by the planner whatever it said).
  t.raises(function() T.Engine{net = net, optim = sgd, layout = 'nhwc'} end,
           "T.Engine: option 'layout' must be 'contiguous' or 'channels_last', got 'nhwc'")
  t.raises(function() T.plan.costs{net = net, sample = {1, 2, 2}, cost = 'measured', layout = 'nhwc'} end,
           "T.plan.costs: option 'layout' must be 'contiguous' or 'channels_last', got 'nhwc'")
  t.raises(function() T.parallel.data_layout{layout = 'nhwc'} end,
           "option --layout must be 'auto', 'contiguous' or 'channels_last', got 'nhwc'")
  t.eq(T.parallel.data_layout{layout = 'auto', device = 'cuda'}, 'contiguous')
  -- Layers compute in f32: an i32 tensor's bytes were read as floats (7.0e-45), a u8 one past its end.
  t.raises(function() nn.ReLU():forward(T.tensor({1, 2, 3}, nil, {dtype = 'i32'})) end,
           'layer ReLU takes f32 tensors, got Tensor(3, i32, host)')
  t.raises(function() nn.Linear(1, 2):forward(T.tensor({{1}}, nil, {dtype = 'u8'})) end,
           'layer Linear takes f32 tensors, got Tensor(1x1, u8, host)')
end)

t.test('no wrong argument crashes anything', function()
  local freed = T.zeros{2}
  freed:free()
  local ds = T.data.dataset(T.zeros{2, 1, 2, 2}, T.tensor({0, 1}, nil, {dtype = 'i32'}))
  local values = {
    false, 0, -1, 2.5, 1e300, 0 / 0, 'x', '', {}, {1, 2}, {-1}, {{}}, {n = 1}, true, print,
    freed, T.zeros{2, 3}, T.tensor({1}, nil, {dtype = 'i32'}), nn.ReLU(), nn.Sequential{},
    T.devices('cpu', 1, {memory = '4MB'})[1], ds, nn.CrossEntropy(), coroutine.create(print),
  }
  -- A fresh object of each type, since a call may free the one before (devices are made
  -- once per method: each holds a thread until the program ends).
  local function subjects(device)
    return {
      Tensor = T.tensor{{1, 2}, {3, 4}}, Layer = nn.Conv2d(1, 1, 1), Device = device,
      Dataset = T.data.dataset(T.zeros{2, 1, 2, 2}, T.tensor({0, 1}, nil, {dtype = 'i32'})),
      CrossEntropy = nn.CrossEntropy(),
    }
  end
  local calls, raised = 0, 0
  local function try(f, ...)
    calls = calls + 1
    local ok, err = pcall(f, ...)
    if not ok then
      raised = raised + 1
      t.ok(type(err) == 'string' and #err > 0, 'an error message')
    end
  end
  for name, f in pairs(core) do
    -- save and metrics_log would write files named after the values (a stray file 'x' in
    -- the working tree); the others only read or compute.
    if type(f) == 'function' and name ~= 'save' and name ~= 'metrics_log' then
      for _, v in ipairs(values) do
        try(f)
        try(f, v)
        try(f, v, v)
        try(f, v, v, v)
      end
    end
  end
  for _, f in pairs(core.data) do
    for _, v in ipairs(values) do
      try(f, v)
      try(f, v, v)
    end
  end
  for type_name, mt in pairs(core.metatables) do
    for _, f in pairs(mt.__index) do
      local device = T.devices('cpu', 1, {memory = '4MB'})[1]
      for _, v in ipairs(values) do
        local self = subjects(device)[type_name]
        try(f, self, v)
        try(f, self, v, v)
        try(f, v)
      end
    end
    for _, v in ipairs(values) do try(mt.__tostring, v) end
  end
  t.ok(calls > 1000 and raised > 500, calls .. ' calls, ' .. raised .. ' errors')
  collectgarbage()
end)
