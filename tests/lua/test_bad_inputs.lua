-- Bad input, everywhere a user can give it: every bound function, the command-line tools and
-- the files they read. Each case asserts that the mistake is refused (an error, or a tool
-- exiting with status 1 or 2 without a Lua traceback) and that the message names it: the
-- function, the option, the value, the file. Cases are tables: {what, function, words...}.
local t = require 'tandem.test'
local T = require 'tandem'
local S = dofile('tests/lua/support.lua')
local nn = T.nn

local i32 = {dtype = 'i32'}
local total = 0

-- Runs every case of `cases`, reporting them as one test named `name`.
local function suite(name, cases)
  t.test(name, function()
    local failures = {}
    for _, case in ipairs(cases) do
      total = total + 1
      local ok, err = pcall(case[2])
      local message = tostring(err)
      if ok then
        failures[#failures + 1] = case[1] .. ': no error'
      else
        for i = 3, #case do
          if not message:find(case[i], 1, true) then
            failures[#failures + 1] = ('%s: message lacks "%s": %s'):format(case[1], case[i], message)
            break
          end
        end
      end
    end
    t.eq(failures, {}, 'cases that did not answer as they should')
  end)
end

-- Tensors.
suite('tensors', {
  {'shape and values disagree', function() return T.tensor({1, 2, 3}, {2, 2}) end, 'shape 2x2 holds 4 elements, the table has 3'},
  {'unknown dtype', function() return T.tensor({1}, {1}, {dtype = 'f64'}) end, "option 'dtype' must be 'f32', 'i32' or 'u8', got 'f64'"},
  {'values not a table', function() return T.tensor('x') end, 'table of numbers expected, got string'},
  {'a string value', function() return T.tensor({'a'}) end, 'entry [1] is a string, expected a number'},
  {'a ragged table', function() return T.tensor{{1, 2}, {3}} end, 'ragged nested table: entry [2] has 1 entries, expected 2'},
  {'unknown tensor option', function() return T.tensor({1}, {1}, {bogus = 1}) end, "T.tensor: unknown option 'bogus' (known: dtype)"},
  {'zeros negative', function() return T.zeros{-1, 2} end, 'shape entry 1 must be a non-negative integer, got -1'},
  {'zeros fraction', function() return T.zeros{2, 1.5} end, 'shape entry 2 must be a non-negative integer, got 1.5'},
  {'ones negative', function() return T.ones{3, -2} end, 'shape entry 2 must be a non-negative integer, got -2'},
  {'randn not a shape', function() return T.randn('x') end, 'shape expected (a list of sizes such as {8, 3, 32, 32}), got string'},
  {'reshape to another count', function() return T.zeros{2, 3}:reshape{4} end, 'cannot reshape Tensor(2x3, f32, host) to 4 (6 elements, 4 wanted)'},
})

-- Every layer constructor: a bad name and an unknown option, named with the constructor.
local constructors = {
  {'nn.ReLU', function(o) return nn.ReLU(o) end}, {'nn.Sigmoid', function(o) return nn.Sigmoid(o) end},
  {'nn.Tanh', function(o) return nn.Tanh(o) end}, {'nn.GELU', function(o) return nn.GELU(o) end},
  {'nn.Linear', function(o) return nn.Linear(2, 2, o) end}, {'nn.Conv2d', function(o) return nn.Conv2d(1, 1, 3, o) end},
  {'nn.BatchNorm2d', function(o) return nn.BatchNorm2d(4, o) end}, {'nn.MaxPool2d', function(o) return nn.MaxPool2d(2, o) end},
  {'nn.AvgPool2d', function(o) return nn.AvgPool2d(2, o) end}, {'nn.LRN', function(o) return nn.LRN(o) end},
  {'nn.Flatten', function(o) return nn.Flatten(o) end}, {'nn.Dropout', function(o) return nn.Dropout(0.5, o) end},
}
local names = {}
for _, c in ipairs(constructors) do
  for _, bad in ipairs({'a.b', '', 5, true, {}}) do
    local shown = type(bad) == 'string' and ("'" .. bad .. "'") or type(bad)
    names[#names + 1] = {c[1] .. ' name ' .. shown, function() return c[2]{name = bad} end,
                         c[1] .. ": option 'name' must be a non-empty string without dots, got "}
  end
  names[#names + 1] = {c[1] .. ' unknown option', function() return c[2]{bogus = 1} end,
                       c[1] .. ": unknown option 'bogus'"}
  names[#names + 1] = {c[1] .. ' options not a table', function() return c[2]('x') end, c[1]}
end
suite('layer names and options', names)

suite('layer arguments', {
  {'Conv2d in_channels 0', function() return nn.Conv2d(0, 4, 3) end, "bad argument #1 to 'nn.Conv2d' (in_channels must be a positive integer, got 0)"},
  {'Conv2d out_channels -1', function() return nn.Conv2d(1, -1, 3) end, 'out_channels must be a positive integer, got -1'},
  {'Conv2d kernel 0', function() return nn.Conv2d(1, 4, 0) end, 'kernel size must be a positive integer or a pair {h, w} of them, got 0'},
  {'Conv2d stride 0', function() return nn.Conv2d(1, 4, 3, {stride = 0}) end, "nn.Conv2d: option 'stride' must be a positive integer"},
  {'Conv2d pad -1', function() return nn.Conv2d(1, 4, 3, {pad = -1}) end, "nn.Conv2d: option 'pad' must be a non-negative integer"},
  {'Conv2d groups 3 of 4', function() return nn.Conv2d(4, 4, 3, {groups = 3}) end, 'groups (3) must divide in_channels (4) and out_channels (4)'},
  {'Conv2d padding', function() return nn.Conv2d(1, 4, 3, {padding = 1}) end, "unknown option 'padding' (known: bias, groups, init, name, pad, stride)"},
  {'Conv2d bias yes', function() return nn.Conv2d(1, 4, 3, {bias = 'yes'}) end, "option 'bias' must be true or false, got 'yes'"},
  {'Conv2d init magic', function() return nn.Conv2d(1, 4, 3, {init = 'magic'}) end, "init 'magic' (known: kaiming"},
  {'Linear in_features 0', function() return nn.Linear(0, 2) end, 'in_features must be a positive integer, got 0'},
  {'Linear out_features x', function() return nn.Linear(2, 'x') end, "out_features must be a positive integer, got 'x'"},
  {'Linear init magic', function() return nn.Linear(2, 2, {init = 'magic'}) end, "'magic'"},
  {'BatchNorm2d channels 0', function() return nn.BatchNorm2d(0) end, 'channels must be a positive integer, got 0'},
  {'BatchNorm2d eps -1', function() return nn.BatchNorm2d(4, {eps = -1}) end, "option 'eps' must be a positive number, got -1"},
  {'BatchNorm2d eps inf', function() return nn.BatchNorm2d(4, {eps = math.huge}) end, "option 'eps' must be a finite positive number, got inf"},
  {'BatchNorm2d momentum 2', function() return nn.BatchNorm2d(4, {momentum = 2}) end, "option 'momentum' must be a number in [0, 1), got 2"},
  {'MaxPool2d kernel 0', function() return nn.MaxPool2d(0) end, "nn.MaxPool2d' (kernel size must be a positive integer"},
  {'AvgPool2d stride -1', function() return nn.AvgPool2d(2, {stride = -1}) end, "nn.AvgPool2d: option 'stride' must be a positive integer"},
  -- The position in the message is the caller's line, not the library's (no tail calls here:
  -- a tail call leaves no caller's line to point at).
  {'MaxPool2d error position', function() local l = nn.MaxPool2d(0); return l end, 'test_bad_inputs.lua:'},
  {'AvgPool2d error position', function() local l = nn.AvgPool2d(2, {stride = -1}); return l end, 'test_bad_inputs.lua:'},
  {'Conv2d error position', function() local l = nn.Conv2d(1, 4, 3, {stride = 0}); return l end, 'test_bad_inputs.lua:'},
  {'LRN alpha inf', function() return nn.LRN{alpha = math.huge} end, "nn.LRN: option 'alpha' must be a finite number, got inf"},
  {'LRN beta -inf', function() return nn.LRN{beta = -math.huge} end, "nn.LRN: option 'beta' must be a finite number, got -inf"},
  {'LRN k x', function() return nn.LRN{k = 'x'} end, "nn.LRN: option 'k' must be a number, got 'x'"},
  {'Dropout p 1', function() return nn.Dropout(1) end, 'p must be a number in [0, 1), got 1'},
  {'Dropout p -0.1', function() return nn.Dropout(-0.1) end, 'p must be a number in [0, 1), got -0.1'},
  {'LeakyReLU slope x', function() return nn.LeakyReLU('x') end, "negative_slope must be a finite number, got 'x'"},
  {'GELU approximate fast', function() return nn.GELU{approximate = 'fast'} end, "option 'approximate' must be one of 'none', 'tanh', got 'fast'"},
  {'Sequential entry 5', function() return nn.Sequential{5} end, 'nn.Sequential: entry 1 is 5, expected a layer'},
  {'Sequential constructor', function() return nn.Sequential{nn.ReLU} end, 'a constructor: call it, e.g. nn.ReLU()'},
  {'Residual without body', function() return nn.Residual{} end, 'nn.Residual: the body is missing'},
  {'a layer in two nets', function() local r = nn.ReLU(); nn.Sequential{r}; return nn.Sequential{r} end, 'a layer belongs to one net (layer:clone() makes a separate copy)'},
  {'Linear forward width', function() return nn.Linear(3, 2):forward(T.zeros{2, 4}) end, 'input has 4 features, weight expects 3'},
  {'Conv2d forward rank', function() return nn.Conv2d(1, 2, 3):forward(T.zeros{2, 4}) end, 'input must be N x C x H x W, got 2x4'},
  {'Conv2d forward channels', function() return nn.Conv2d(3, 2, 3):forward(T.zeros{1, 1, 5, 5}) end, 'input has 1 channels, weight expects 3'},
  {'forward mode test', function() return nn.ReLU():forward(T.zeros{2}, {mode = 'test'}) end, "option 'mode' must be 'train' or 'eval', got 'test'"},
})

suite('losses', {
  {'CrossEntropy smoothing 1', function() return nn.CrossEntropy{label_smoothing = 1} end, "option 'label_smoothing' must be a number in [0, 1), got 1"},
  {'CrossEntropy unknown', function() return nn.CrossEntropy{smoothing = 0.1} end, "unknown option 'smoothing'"},
  {'MSE reduction', function() return nn.MSE{reduction = 'sum'} end, "nn.MSE: unknown option 'reduction' (it takes no options)"},
  {'BCEWithLogits pos_weight', function() return nn.BCEWithLogits{pos_weight = 2} end, "nn.BCEWithLogits: unknown option 'pos_weight' (it takes no options)"},
  {'CrossEntropy f32 labels', function() return nn.CrossEntropy():forward(T.zeros{2, 3}, T.tensor{0, 1}) end, 'labels I32'},
  {'CrossEntropy label 3 of 3 classes', function() return nn.CrossEntropy():forward(T.zeros{2, 3}, T.tensor({0, 3}, nil, i32)) end, 'label 3 of sample 2 is outside [0, 3)'},
  {'MSE targets of another shape', function() return nn.MSE():forward(T.zeros{2, 3}, T.zeros{2, 4}) end, "MSE: targets 2x4 and the net's output 2x3 differ in shape"},
  {'BCEWithLogits i32 targets', function() return nn.BCEWithLogits():forward(T.zeros{2, 1}, T.tensor({0, 1}, {2, 1}, i32)) end, 'must be F32, got F32 and I32'},
  {'MSE backward shape', function() return nn.MSE():backward(T.zeros{2, 3}, T.zeros{3, 3}) end, 'targets 3x3'},
  {'label_smoothing of MSE', function() return nn.MSE():label_smoothing() end, 'label_smoothing belongs to CrossEntropy, not MSE'},
})

-- Optimizers: each numeric option given a wrong type, and out-of-range values.
local optim = {}
for _, key in ipairs({'lr', 'momentum', 'dampening', 'weight_decay', 'clip_norm'}) do
  for _, bad in ipairs({'x', true, {}}) do
    optim[#optim + 1] = {'SGD ' .. key .. ' ' .. tostring(bad), function() return T.optim.SGD{[key] = bad} end,
                         "T.optim.SGD: option '" .. key .. "' must be a finite number"}
  end
end
for _, ctor in ipairs({'Adam', 'AdamW'}) do
  for _, key in ipairs({'lr', 'eps', 'weight_decay', 'clip_norm'}) do
    for _, bad in ipairs({'x', true, {}}) do
      optim[#optim + 1] = {ctor .. ' ' .. key .. ' ' .. tostring(bad), function() return T.optim[ctor]{[key] = bad} end,
                           'T.optim.' .. ctor .. ": option '" .. key .. "' must be a finite number"}
    end
  end
end
for _, c in ipairs({
  {'SGD lr -1', {lr = -1}, "T.optim.SGD: option 'lr' must be a finite number >= 0, got -1"}, {'SGD momentum 1', {momentum = 1}, "T.optim.SGD: option 'momentum' must be a finite number in [0, 1), got 1"},
  {'SGD dampening 2', {dampening = 2}, "T.optim.SGD: option 'dampening' must be a finite number in [0, 1], got 2"}, {'SGD weight_decay -1', {weight_decay = -1}, "T.optim.SGD: option 'weight_decay' must be a finite number >= 0, got -1"},
  {'SGD Nesterov without momentum', {nesterov = true}, 'Nesterov momentum needs momentum > 0'},
  {'SGD nesterov yes', {nesterov = 'yes'}, "T.optim.SGD: option 'nesterov' must be true or false, got 'yes'"},
  {'SGD clip_norm -1', {clip_norm = -1}, "T.optim.SGD: option 'clip_norm' must be a finite number >= 0 (0: no clipping), got -1"},
  {'SGD learning_rate', {learning_rate = 1}, "T.optim.SGD: unknown option 'learning_rate'"},
}) do optim[#optim + 1] = {c[1], function() return T.optim.SGD(c[2]) end, c[3]} end
for _, c in ipairs({
  {'Adam betas 0.9', {betas = 0.9}, "T.optim.Adam: option 'betas' must be a pair of finite numbers in [0, 1), got 0.9"},
  {'Adam three betas', {betas = {0.9, 0.9, 0.9}}, "T.optim.Adam: option 'betas' must be a pair of finite numbers in [0, 1), got a list of 3 entries"},
  {'Adam beta1 1', {betas = {1, 0.9}}, "T.optim.Adam: option 'betas' must be a pair of finite numbers in [0, 1), got a list whose entry 1 is 1"},
  {'Adam beta2 -1', {betas = {0.9, -1}}, "T.optim.Adam: option 'betas' must be a pair of finite numbers in [0, 1), got a list whose entry 2 is -1"},
  {'Adam eps 0', {eps = 0}, "T.optim.Adam: option 'eps' must be a finite number > 0, got 0"},
  {'Adam lr inf', {lr = math.huge}, "T.optim.Adam: option 'lr' must be a finite number >= 0, got inf"},
  {'Adam lr nan', {lr = 0 / 0}, "T.optim.Adam: option 'lr' must be a finite number >= 0, got nan"},
  {'Adam momentum', {momentum = 0.9}, "T.optim.Adam: unknown option 'momentum'"},
}) do optim[#optim + 1] = {c[1], function() return T.optim.Adam(c[2]) end, c[3]} end
optim[#optim + 1] = {'Adam eps inf', function() return T.optim.Adam{eps = math.huge} end, "T.optim.Adam: option 'eps' must be a finite number > 0, got inf"}
optim[#optim + 1] = {'SGD clip_norm inf', function() return T.optim.SGD{clip_norm = math.huge} end, "T.optim.SGD: option 'clip_norm' must be a finite number >= 0 (0: no clipping), got inf"}
optim[#optim + 1] = {'AdamW weight_decay -1', function() return T.optim.AdamW{weight_decay = -1} end, "T.optim.AdamW: option 'weight_decay' must be a finite number >= 0, got -1"}
suite('optimizers', optim)

suite('schedules', {
  {'Cosine without total_steps', function() return T.schedule.Cosine{lr = 0.1} end, 'T.schedule.Cosine: option total_steps is required'},
  {'Cosine total_steps 0', function() return T.schedule.Cosine{lr = 0.1, total_steps = 0} end, "T.schedule.Cosine: option 'total_steps' must be a positive integer, got 0"},
  {'Cosine total_steps 1.5', function() return T.schedule.Cosine{lr = 0.1, total_steps = 1.5} end, "T.schedule.Cosine: option 'total_steps' must be a positive integer, got 1.5"},
  {'Cosine total_steps inf', function() return T.schedule.Cosine{lr = 0.1, total_steps = math.huge} end, "T.schedule.Cosine: option 'total_steps' must be a positive integer, got inf"},
  {'Cosine lr x', function() return T.schedule.Cosine{lr = 'x', total_steps = 5} end, "T.schedule.Cosine: option 'lr' must be a finite number >= 0, got 'x'"},
  {'Cosine lr inf', function() return T.schedule.Cosine{lr = math.huge, total_steps = 5} end, "T.schedule.Cosine: option 'lr' must be a finite number >= 0, got inf"},
  {'Cosine min_lr -1', function() return T.schedule.Cosine{lr = 1, total_steps = 5, min_lr = -1} end, "T.schedule.Cosine: option 'min_lr' must be a finite number >= 0, got -1"},
  {'Cosine error position', function() local s = T.schedule.Cosine{lr = 0.1, total_steps = 0}; return s end, 'test_bad_inputs.lua:'},
  {'Step step_size 0', function() return T.schedule.Step{lr = 0.1, step_size = 0} end, "T.schedule.Step: option 'step_size' must be a positive integer, got 0"},
  {'Step gamma x', function() return T.schedule.Step{lr = 0.1, step_size = 2, gamma = 'x'} end, "T.schedule.Step: option 'gamma' must be a finite number > 0, got 'x'"},
  {'MultiStep milestone 1.5', function() return T.schedule.MultiStep{lr = 1, milestones = {1.5}} end, "T.schedule.MultiStep: option 'milestones' must hold whole step numbers >= 0; entry 1 is 1.5"},
  {'MultiStep milestone inf', function() return T.schedule.MultiStep{lr = 1, milestones = {2, 1 / 0}} end, "option 'milestones' must hold whole step numbers >= 0; entry 2 is inf"},
  {'MultiStep milestones 5', function() return T.schedule.MultiStep{lr = 1, milestones = 5} end, "T.schedule.MultiStep: option 'milestones' must be a list of step numbers such as {30, 60}, got 5"},
  {'MultiStep milestones 5 then 3', function() return T.schedule.MultiStep{lr = 1, milestones = {5, 3}} end, "T.schedule.MultiStep: option 'milestones' must be strictly increasing, got 5 then 3"},
  {'Warmup steps -1', function() return T.schedule.Warmup{after = T.schedule.Constant{lr = 1}, steps = -1} end, "T.schedule.Warmup: option 'steps' must be a non-negative integer, got -1"},
  {'Warmup after 5', function() return T.schedule.Warmup{after = 5, steps = 1} end, "T.schedule.Warmup: option 'after' must be a schedule"},
  {'Warmup start_factor 2', function() return T.schedule.Warmup{after = T.schedule.Constant{lr = 1}, steps = 1, start_factor = 2} end, "T.schedule.Warmup: option 'start_factor' must be a number in [0, 1], got 2"},
  {'Hybrid switch 2', function() return T.schedule.Hybrid{lr = 1, total_steps = 10, switch = 2} end, "T.schedule.Hybrid: option 'switch' must be a number in (0, 1], got 2"},
  {'Hybrid total_steps 0', function() return T.schedule.Hybrid{lr = 1, total_steps = 0} end, "T.schedule.Hybrid: option 'total_steps' must be a positive integer, got 0"},
  {'Warmup without after', function() return T.schedule.Warmup{steps = 10} end, 'T.schedule.Warmup: option after is required'},
  {'Constant without lr', function() return T.schedule.Constant{} end, 'T.schedule.Constant: option lr is required'},
  {'Constant lr -1', function() return T.schedule.Constant{lr = -1} end, "T.schedule.Constant: option 'lr' must be a finite number >= 0, got -1"},
  {'Cosine unknown', function() return T.schedule.Cosine{lr = 1, total = 5} end, "unknown option 'total'"},
  {'Cosine lr 1e300', function() return T.schedule.Cosine{lr = 1e300, total_steps = 5} end, "T.schedule.Cosine: option 'lr' must be at most 3.4e38 (it is kept as a float), got 1e+300"},
  {'Step gamma 1e-50', function() return T.schedule.Step{lr = 1, step_size = 2, gamma = 1e-50} end, "T.schedule.Step: option 'gamma' must be at least 1.2e-38 (it is kept as a float), got 1e-50"},
  {'Step gamma 1e50', function() return T.schedule.Step{lr = 1, step_size = 2, gamma = 1e50} end, "T.schedule.Step: option 'gamma' must be at most 3.4e38 (it is kept as a float), got 1e+50"},
  {'Hybrid switch 1e-50', function() return T.schedule.Hybrid{lr = 1, total_steps = 10, switch = 1e-50} end, "T.schedule.Hybrid: option 'switch' must be at least 1.2e-38 (it is kept as a float), got 1e-50"},
  {'Hybrid min_lr 1e39', function() return T.schedule.Hybrid{lr = 1, total_steps = 10, min_lr = 1e39} end, "T.schedule.Hybrid: option 'min_lr' must be at most 3.4e38 (it is kept as a float), got 1e+39"},
  {'MultiStep gamma 0', function() return T.schedule.MultiStep{lr = 1, milestones = {2}, gamma = 0} end, "T.schedule.MultiStep: option 'gamma' must be a finite number > 0, got 0"},
  {'lr at step -1', function() local r = T.schedule.Cosine{lr = 1, total_steps = 5}:lr(-1); return r end, 'learning rate asked for step -1 of cosine(lr=1, total_steps=5, min_lr=0); steps count from 0'},
  {'lr at step 1.5', function() local r = T.schedule.Cosine{lr = 1, total_steps = 5}:lr(1.5); return r end, "bad argument #1 to 'lr' (integer expected, got 1.5)"},
})

suite('devices', {
  {'kind tpu', function() return T.devices('tpu', 1) end, "unknown device kind 'tpu' (known: cpu, cuda)"},
  {'count 0', function() return T.devices('cpu', 0) end, 'device count must be in [1, 256], got 0'},
  {'count 1000', function() return T.devices('cpu', 1000) end, 'device count must be in [1, 256], got 1000'},
  {'count -1', function() return T.devices('cpu', -1) end, 'device count must be in [1, 256], got -1'},
  {'count 1.5', function() return T.devices('cpu', 1.5) end, 'device count must be an integer in [1, 256], got 1.5'},
  {'count x', function() return T.devices('cpu', 'x') end, 'device count must be an integer in [1, 256], got string'},
  {'memory -1', function() return T.devices('cpu', 1, {memory = -1}) end, "option 'memory' must be a size such as '512MB'"},
  {'memory lots', function() return T.devices('cpu', 1, {memory = 'lots'}) end, "option 'memory': cannot read a size from 'lots'"},
  {'memory 12 parsecs', function() return T.devices('cpu', 1, {memory = '12 parsecs'}) end, "option 'memory': cannot read a size from '12 parsecs'"},
  {'thread', function() return T.devices('cpu', 1, {thread = 1}) end, "T.devices: unknown option 'thread' (known: memory, threads)"},
})

-- The engine: its options, and the batches it is given.
local function small_net() return nn.Sequential{nn.Flatten(), nn.Linear(16, 2)} end
local function one_cpu() return T.devices('cpu', 1, {threads = 1}) end
local function engine_with(extra)
  local o = {net = small_net(), optim = T.optim.SGD{lr = 0.1}, devices = one_cpu()}
  for k, v in pairs(extra) do o[k] = v end
  return T.Engine(o)
end
local engine = engine_with({})
local x = T.zeros{4, 1, 4, 4}
local labels = T.tensor({0, 1, 1, 0}, nil, i32)
local ds = T.data.dataset(x, labels)
suite('the engine', {
  {'no net', function() return T.Engine{optim = T.optim.SGD{}} end, "T.Engine: option 'net' is required: a net (nn.Sequential{...})"},
  {'no optim', function() return T.Engine{net = small_net()} end, "T.Engine: option 'optim' is required: an optimizer (T.optim.SGD{lr = 0.1}, T.optim.Adam{...})"},
  {'optim a table', function() return engine_with{optim = {lr = 1}} end, "T.Engine: option 'optim' must be an optimizer (T.optim.SGD{lr = 0.1}, T.optim.Adam{...}), got table"},
  {'loss a table', function() return engine_with{loss = {}} end, "T.Engine: option 'loss' must be a loss (nn.CrossEntropy(), nn.MSE(), nn.BCEWithLogits()), got table"},
  {'schedule a table', function() return engine_with{schedule = {}} end, "T.Engine: option 'schedule' must be a schedule (T.schedule.Cosine{...}, T.schedule.Step{...}, ...), got table"},
  {'schedule a number', function() return engine_with{schedule = 0.1} end, "T.Engine: option 'schedule' must be a schedule"},
  {'net a table', function() return engine_with{net = {}} end, "T.Engine: option 'net' must be a net (nn.Sequential{...}), got table"},
  {'optim an SGD constructor', function() return engine_with{optim = T.optim.SGD} end, "T.Engine: option 'optim' must be an optimizer"},
  {'devices names', function() return engine_with{devices = {'cpu'}} end, "T.Engine: option 'devices' must be a list of devices from T.devices, got a list whose entry 1 is 'cpu'"},
  {'seed 1.5', function() return engine_with{seed = 1.5} end, "T.Engine: option 'seed' must be a non-negative integer, got 1.5"},
  {'seed -1', function() return engine_with{seed = -1} end, "option 'seed' must be a non-negative integer, got -1"},
  {'layout nhwc', function() return engine_with{layout = 'nhwc'} end, "T.Engine: option 'layout' must be 'contiguous' or 'channels_last', got 'nhwc'"},
  {'epochs', function() return engine_with{epochs = 1} end, "T.Engine: unknown option 'epochs'"},
  {'parallel group', function() return engine_with{parallel = {group = 2}} end, "unknown option 'group' (known: groups"},
  {'parallel groups 0', function() return engine_with{parallel = {groups = 0}} end, 'groups must be at least 1, got 0'},
  {'parallel pipeline zb', function() return engine_with{parallel = {pipeline = 'zb'}} end, "unknown pipeline schedule 'zb' (known: gpipe, 1f1b)"},
  {'parallel recompute {1, 2}', function() return engine_with{devices = T.devices('cpu', 2, {threads = 1}), parallel = {stages = 2, recompute = {1, 2}}} end, 'T.Engine: parallel.recompute entry 1 is 1; give true or false for each stage'},
  {'parallel recompute yes', function() return engine_with{devices = T.devices('cpu', 2, {threads = 1}), parallel = {stages = 2, recompute = 'yes'}} end, 'parallel.recompute must be a boolean or a list of booleans, one per stage, got string'},
  {'parallel bucket_bytes 1.5', function() return engine_with{devices = T.devices('cpu', 2, {threads = 1}), parallel = {groups = 2, bucket_bytes = 1.5}} end, 'T.Engine: parallel.bucket_bytes must be at least 1 and a whole number of bytes, got 1.5'},
  {'parallel bucket_bytes inf', function() return engine_with{devices = T.devices('cpu', 2, {threads = 1}), parallel = {groups = 2, bucket_bytes = math.huge}} end, 'parallel.bucket_bytes must be at least 1 and a whole number of bytes, got inf'},
  {'devices for 2 groups', function() return engine_with{parallel = {groups = 2}} end, '2 groups x 1 stages need 2 devices; given 1'},
  {'step without labels', function() return engine:step(x) end, 'tandem.Tensor expected, got no value'},
  {'step f32 labels', function() return engine:step(x, T.zeros{4}) end, 'CrossEntropy takes class labels, i32 with one per image: got Tensor(4, f32, host) for 4 images'},
  {'step 2 labels for 4 images', function() return engine:step(x, T.tensor({0, 1}, nil, i32)) end, 'got Tensor(2, i32, host) for 4 images'},
  {'step label out of range', function() return engine:step(x, T.tensor({0, 1, 2, 0}, nil, i32)) end, 'label 2 of sample 3 is outside [0, 2)', 'in the loss of samples 1..4 of the batch'},
  {'step negative label', function() return engine:step(x, T.tensor({0, -1, 1, 0}, nil, i32)) end, 'label -1 of sample 2 is outside [0, 2)'},
  {'step images of another size', function() return engine:step(T.zeros{4, 1, 5, 5}, labels) end, "Linear 'fc1': input has 25 features, weight expects 16"},
  {'step empty batch', function() return engine:step(T.tensor({}, {0, 1, 4, 4}), T.tensor({}, {0}, i32)) end, 'the batch is empty'},
  {'MSE with labels', function() return engine_with{loss = nn.MSE()}:step(x, labels) end, "MSE takes f32 targets shaped as the net's output"},
  {'evaluate nil', function() return engine:evaluate(nil) end, "bad argument #1 to 'evaluate' (a data set (T.data.mnist, T.data.dataset) or a T.data.Loader expected, got nil)"},
  {'evaluate a table', function() return engine:evaluate({}) end, 'or a T.data.Loader expected, got table'},
  {'evaluate batch 0', function() return engine:evaluate(ds, {batch = 0}) end, "evaluate: option 'batch' must be a positive integer, got 0"},
  {'evaluate batch 1.5', function() return engine:evaluate(ds, {batch = 1.5}) end, "evaluate: option 'batch' must be a positive integer, got 1.5"},
  {'evaluate size', function() return engine:evaluate(ds, {size = 2}) end, "evaluate: unknown option 'size' (known: batch)"},
  {'prepare batch 0', function() return engine:prepare({1, 4, 4}, 0) end, 'batch must be at least 1'},
  {'prepare 3 channels', function() return engine:prepare({3, 4, 4}, 2) end, 'input has 48 features, weight expects 16'},
  {'trace without trace', function() return engine:write_trace(S.tmpname('.json')) end, 'this engine records no trace (make it with trace = true)'},
  {'save where no folder can be', function() return engine:save('/proc/none/ck.safetensors') end, 'engine:save: cannot create the folder /proc/none for /proc/none/ck.safetensors'},
})

suite('data sets and batches', {
  {'2-D images', function() return T.data.dataset(T.zeros{4, 16}, labels) end, 'dataset images must be contiguous f32 N x C x H x W, got Tensor(4x16, f32, host)'},
  {'2 targets for 4 images', function() return T.data.dataset(x, T.tensor({0, 1}, nil, i32)) end, 'dataset with 4 images (Tensor(4x1x4x4, f32, host)) but 2 targets'},
  {'a negative label', function() return T.data.dataset(x, T.tensor({0, -1, 1, 0}, nil, i32)) end, 'dataset label 2 is -1'},
  {'mnist std 0', function() return T.data.mnist('/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz', '/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz', {std = 0}) end, "T.data.mnist: option 'std' must be a finite number > 0, got 0"},
  {'mnist files swapped', function() return T.data.mnist('/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz', '/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz') end, 't10k-labels-idx1-ubyte.gz holds a 1-dimensional array; images are N x H x W or N x C x H x W'},
  {'folder with an option it lacks', function() return T.data.folder('x', {y = 1}) end, "T.data.folder: unknown option 'y' (it takes no options)"},
  {'batch of a number', function() return ds:batch(1) end, 'list of sample indices expected, got number'},
  {'batch index 0', function() return ds:batch{0} end, 'entry 1 is not a sample index in [1, 4]'},
  {'batch index 5', function() return ds:batch{1, 5} end, 'entry 2 is not a sample index in [1, 4]'},
  {'batch crop_pad -1', function() return ds:batch({1}, 1, 1, {crop_pad = -1}) end, "dataset:batch: option 'crop_pad' must be a non-negative integer, got -1"},
  {'epoch_order of -1', function() return T.data.epoch_order(-1, 1, 1) end, 'n must be in [0, 67108864], got -1'},
  {'Loader without source', function() return T.data.Loader{batch = 2} end, "T.data.Loader: option 'source' is required"},
  {'Loader source 5', function() return T.data.Loader{source = 5, batch = 2} end, "T.data.Loader: option 'source' must be a data source (T.data.folder, T.data.lmdb, T.data.list), got 5"},
})

-- Missing files are answered with nil and a message naming them (a recipe may branch on it).
suite('missing files', {
  {'mnist', function() local a, b = T.data.mnist('/no/such.gz', '/no/such2.gz'); assert(a == nil); error(b) end, '/no/such.gz: no such file'},
  {'lmdb', function() local a, b = T.data.lmdb('/no/such/db'); assert(a == nil); error(b) end, '/no/such/db: no such file or directory'},
  {'folder', function() local a, b = T.data.folder('/no/such/folder'); assert(a == nil); error(b) end, '/no/such/folder: no such file or directory'},
  {'T.load', function() local a, b = T.load('/no/such.safetensors'); assert(a == nil); error(b) end, '/no/such.safetensors: no such file'},
  {'engine:load', function() local a, b = engine:load('/no/such/ck.safetensors'); assert(a == nil); error(b) end, 'no checkpoint at /no/such/ck.safetensors'},
})

-- Files that are there but broken: every cut of a checkpoint, and garbage.
local checkpoint = S.tmpname('.safetensors')
engine:save(checkpoint)
local whole = S.read(checkpoint)
local broken = {}
for _, cut in ipairs({0, 4, 8, 12, 64, 200, math.floor(#whole / 2), #whole - 1}) do
  local path = S.tmpname('.safetensors')
  S.write(path, whole:sub(1, cut))
  broken[#broken + 1] = {'checkpoint cut at byte ' .. cut, function() return engine:load(path) end, path}
  broken[#broken + 1] = {'T.load of it cut at byte ' .. cut, function() return T.load(path) end, path}
end
for _, garbage in ipairs({'not a checkpoint at all', string.rep('\255', 64), '\16\0\0\0\0\0\0\0{"a":1}        '}) do
  local path = S.tmpname('.safetensors')
  S.write(path, garbage)
  broken[#broken + 1] = {'garbage ' .. #garbage .. ' bytes', function() return engine:load(path) end, path}
end
local other = S.tmpname('.safetensors')
T.save(other, {x = T.zeros{2}})
broken[#broken + 1] = {'a safetensors file that is no checkpoint', function() return engine:load(other) end, 'is not a Tandem checkpoint'}
local wider = engine_with{net = nn.Sequential{nn.Flatten(), nn.Linear(16, 3)}}
broken[#broken + 1] = {'a checkpoint of another net', function() return wider:load(checkpoint) end, "'model.fc1.weight' is 2x16, the net expects 3x16"}
broken[#broken + 1] = {'a checkpoint of another optimizer',
  function()
    local adam = engine_with{optim = T.optim.Adam{}}
    adam:step(x, labels)
    local path = S.tmpname('.safetensors')
    adam:save(path)
    return engine_with{optim = T.optim.SGD{lr = 0.1, momentum = 0.9}}:load(path)
  end, "SGD state: entry 'exp_avg.", 'was it saved with another optimizer?'}
-- Metadata that save() never writes: a step or seed that is negative, a fraction or text.
local tensors, metadata = T.load(checkpoint)
for _, c in ipairs({{'step', '-5'}, {'step', '1.5'}, {'step', '7x'}, {'seed', '-1'}, {'seed', '2.5'}}) do
  local path = S.tmpname('.safetensors')
  local changed = {}
  for k, v in pairs(metadata) do changed[k] = v end
  changed[c[1]] = c[2]
  T.save(path, tensors, changed)
  broken[#broken + 1] = {('checkpoint %s %s'):format(c[1], c[2]), function() return engine:load(path) end,
                         ("%s: metadata '%s' must be a whole number >= 0, got '%s'"):format(path, c[1], c[2])}
end
suite('broken files', broken)

suite('saving', {
  {'T.save of a number', function() return T.save(S.tmpname('.st'), 5) end, 'table of name = tensor expected, got number'},
  {'T.save of a number entry', function() return T.save(S.tmpname('.st'), {a = 5}) end, "entry 'a' is a number, expected a tensor"},
  {'T.save bad metadata', function() return T.save(S.tmpname('.st'), {a = T.zeros{1}}, {m = {}}) end, 'metadata must map strings to strings, numbers or booleans'},
  {'T.save where no folder can be', function() return T.save('/proc/none/x.safetensors', {a = T.zeros{1}}) end, 'cannot write /proc/none/x.safetensors'},
  {'image grid of 2 channels', function() return T.save_image_grid(S.tmpname('.png'), T.zeros{1, 2, 4, 4}) end, 'T.save_image_grid: an image grid takes f32 N x C x H x W images with 1 or 3 channels'},
  {'image grid of 0 columns', function() return T.save_image_grid(S.tmpname('.png'), T.zeros{1, 1, 4, 4}, {columns = 0}) end, "T.save_image_grid: option 'columns' must be a positive integer, got 0"},
  {'image grid range 1..0', function() return T.save_image_grid(S.tmpname('.png'), T.zeros{1, 1, 4, 4}, {range = {1, 0}}) end, "range must be two finite numbers, low < high; got 1, 0"},
  {'image grid path 5', function() return T.save_image_grid(5, T.zeros{1, 1, 4, 4}) end, "bad argument #1 to 'T.save_image_grid' (path must be a string, got 5)"},
  {'Progress total 0', function() return T.Progress{total = 0} end, "T.Progress: option 'total' must be a positive number, got 0"},
  {'Progress mode fancy', function() return T.Progress{total = 3, mode = 'fancy'} end, "option 'mode' must be one of 'auto', 'bar', 'plain', 'none', got 'fancy'"},
})

-- The planner: search options, this machine as topologies, topology tables, plan files.
local lenet, lenet_sample = dofile('recipes/nets/lenet5.lua'){}
local server = T.plan.topology('server8_pcie')
local function search_with(extra)
  local args = {net = lenet, sample = lenet_sample, batch = 64, topology = server}
  for k, v in pairs(extra) do args[k] = v end
  return T.plan.search(args)
end
local function cpu_topology(change)
  local t = {name = 'mine', nodes = {{name = 'host', cores = 2},
             {name = 'c0', parent = 'host', link = 'shared_memory', device = 'cpu', threads = 1, memory = '1GB'}}}
  change(t)
  return t
end
local function gpu_pair(count)
  return {name = 'pair', nodes = {{name = 'host', cores = 2}, {name = 'g0', parent = 'host', link = 'pcie3_x16', device = 'V100'},
          {name = 'g1', parent = 'host', link = 'pcie3_x16', device = 'V100'}}, peers = {{'g0', 'g1', link = 'nvlink2', count = count}}}
end
local function plan_file(text)
  local path = S.tmpname('.lua')
  S.write(path, text)
  return path
end
local good_plan = "groups = 1, stages = 1, micro_batches = 1, pipeline = 'gpipe', split = {}, threads = 1, batch = 16"
local plan_cases = {
  {'search batch 0', function() return search_with{batch = 0} end, "T.plan.search: option 'batch' must be a positive integer, got 0"},
  {'search batch 1.5', function() return search_with{batch = 1.5} end, "T.plan.search: option 'batch' must be a positive integer, got 1.5"},
  {'search top 0', function() return search_with{top = 0} end, "T.plan.search: option 'top' must be a positive integer, got 0"},
  {'search devices -1', function() return search_with{devices = -1} end, "T.plan.search: option 'devices' must be an integer in [0, 256] (0: every count the topology allows), got -1"},
  {'search bucket_bytes 0.5', function() return search_with{bucket_bytes = 0.5} end, "T.plan.search: option 'bucket_bytes' must be a positive integer, got 0.5"},
  {'search micro_batches {0}', function() return search_with{micro_batches = {0}} end, "T.plan.search: option 'micro_batches' must be a list of integers in [1, 1048576], got a list whose entry 1 is 0"},
  {'search iterations 0', function() return search_with{iterations = 0} end, "T.plan.search: option 'iterations' must be an integer in [1, 1048576], got 0"},
  {'simulate warmup -1', function() return T.plan.simulate{net = lenet, sample = lenet_sample, batch = 64, topology = server, warmup = -1, plan = {}} end, "T.plan.simulate: option 'warmup' must be an integer in [0, 1048576], got -1"},
  {'costs seed -1', function() return T.plan.costs{net = lenet, sample = lenet_sample, seed = -1} end, "T.plan.costs: option 'seed' must be a non-negative integer, got -1"},
  {'machine threads 5000', function() return T.plan.machine{threads = 5000} end, "T.plan.machine: option 'threads' must be an integer in [0, 1024]"},
  {'machine cores 1e6', function() return T.plan.machine{cores = 1e6} end, "T.plan.machine: option 'cores' must be an integer in [1, 4096], got 1000000"},
  {'machine memory 0B', function() return T.plan.machine{memory = '0B'} end, "T.plan.machine: option 'memory' must be a size above 0 such as '512MB' or a byte count, got '0B'"},
  {'machine 3 devices on 4 cores', function() return T.plan.machine{cores = 4, devices = 3} end, 'T.plan.machine: no CPU layout of 3 devices on 4 cores (the counts that divide the cores: 1, 2, 4)'},
  {'topology threads 1.5', function() return T.plan.topology(cpu_topology(function(t) t.nodes[2].threads = 1.5 end)) end, "topology 'mine': node 'c0': field 'threads' must be an integer in [1, 1024], got 1.5"},
  {'topology threads x', function() return T.plan.topology(cpu_topology(function(t) t.nodes[2].threads = 'x' end)) end, "topology 'mine': node 'c0': field 'threads' must be an integer in [1, 1024], got string"},
  {'topology cores -2', function() return T.plan.topology(cpu_topology(function(t) t.nodes[1].cores = -2 end)) end, "topology 'mine': node 'host': field 'cores' must be an integer in [0, 1048576], got -2"},
  {'topology memory -1', function() return T.plan.topology(cpu_topology(function(t) t.nodes[2].memory = -1 end)) end, "topology 'mine': node 'c0': field 'memory' must be a byte count above 0 or a size ('16GB'), got -1"},
  {'topology memory lots', function() return T.plan.topology(cpu_topology(function(t) t.nodes[2].memory = 'lots' end)) end, "topology 'mine': node 'c0': field 'memory': cannot read a size from 'lots'"},
  {'topology name 5', function() return T.plan.topology(cpu_topology(function(t) t.nodes[2].name = 5 end)) end, "topology 'mine': node 2: field 'name' must be a string, got 5"},
  {'topology node field thread', function() return T.plan.topology(cpu_topology(function(t) t.nodes[2].thread = 2 end)) end, "topology 'mine': node 'c0': unknown field 'thread' (known: name, parent, link, device, memory, threads, cores, count)"},
  {'topology field nodez', function() return T.plan.topology(cpu_topology(function(t) t.nodez = {} end)) end, "topology 'mine': unknown field 'nodez'"},
  {'topology link x', function() return T.plan.topology(cpu_topology(function(t) t.nodes[2].link = 'x' end)) end, "topology 'mine': node 'c0': unknown link model 'x'; known: "},
  {'topology device tpu', function() return T.plan.topology(cpu_topology(function(t) t.nodes[2].device = 'tpu' end)) end, "topology 'mine': node 'c0': unknown device model 'tpu'; known: "},
  {'topology peer count 1.5', function() return T.plan.topology(gpu_pair(1.5)) end, "topology 'pair': peer link g0 - g1: field 'count' must be an integer in [1, 64], got 1.5"},
  {'topology error position', function() local t = T.plan.topology(cpu_topology(function(t) t.nodes[2].threads = 0 end)); return t end, 'test_bad_inputs.lua:'},
  {'topology file missing', function() return T.plan.topology('/no/such.lua') end, "topology '/no/such.lua': no such file (known topologies: "},
  {'plan file missing', function() return T.plan.load('/no/such/plan.lua') end, 'plan file /no/such/plan.lua: no such file'},
  {'plan file groups 0', function() return T.plan.load(plan_file('return {' .. good_plan .. ', groups = 0}')) end, "field 'groups' must be an integer in [1, 256], got 0"},
  {'plan file stages 1.5', function() return T.plan.load(plan_file('return {' .. good_plan .. ', stages = 1.5}')) end, "field 'stages' must be an integer in [1, 256], got 1.5"},
  {'plan file pipeline zb', function() return T.plan.load(plan_file('return {' .. good_plan .. ", pipeline = 'zb'}")) end, "field 'pipeline' must be one of 'gpipe', '1f1b', got 'zb'"},
  {'plan file threads 5000', function() return T.plan.load(plan_file('return {' .. good_plan .. ', threads = 5000}')) end, "field 'threads' must be an integer in [0, 1024]"},
  {'plan file recompute 1', function() return T.plan.load(plan_file('return {' .. good_plan .. ', recompute = 1}')) end, "field 'recompute' must be true, false or a list of them, got 1"},
  {'plan file predicted inf', function() return T.plan.load(plan_file('return {' .. good_plan .. ', predicted_step_ms = math.huge}')) end, "field 'predicted_step_ms' must be a finite number > 0, got inf"},
  {'plan file unknown field', function() return T.plan.load(plan_file('return {' .. good_plan .. ', group = 2}')) end, "unknown field 'group' (known: batch, cores, device"},
  {'plan file raises', function() return T.plan.load(plan_file('error("boom")')) end, 'boom'},
}
suite('planning', plan_cases)

-- A database record that does not decode is named with its database, in plain words.
local db_dir = S.tmpname('_lmdb')
local images_dir = db_dir .. '/images'
S.tandem({'gen-images', images_dir, '--classes=2', '--per-class=2', '--min-size=16', '--max-size=16', '--format=png'})
S.tandem({'mkdb', images_dir, db_dir .. '/db', '--encoding=png'})
local data_mdb = S.read(db_dir .. '/db/data.mdb')
local ihdr = data_mdb:find('IHDR', 1, true)
S.write(db_dir .. '/db/data.mdb', data_mdb:sub(1, ihdr - 1) .. 'JUNK' .. data_mdb:sub(ihdr + 4))
os.execute('mkdir -p ' .. S.quote(db_dir .. '/garbage'))
S.write(db_dir .. '/garbage/data.mdb', string.rep('not an LMDB file. ', 1000))
suite('databases', {
  {'a record that does not decode', function()
    local loader = T.data.Loader{source = assert(T.data.lmdb(db_dir .. '/db')), batch = 2, strict = true, quiet = true}
    for _ in loader:batches(1) do end
  end, db_dir .. "/db: cannot decode image '", "(png, "},
  {'Loader seed -1', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 2, seed = -1} end, "T.data.Loader: option 'seed' must be a non-negative integer, got -1"},
  {'Loader batch 1e12', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 1e12} end, "T.data.Loader: option 'batch' must be an integer in [1, 16777216], got 1000000000000"},
  {'Loader prefetch 1e9', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 2, prefetch = 1e9} end, "T.data.Loader: option 'prefetch' must be an integer in [1, 1024], got 1000000000"},
  {'Loader batch 1.5', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 1.5} end, "T.data.Loader: option 'batch' must be an integer in [1, 16777216], got 1.5"},
  {'Loader batch x', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 'x'} end, "T.data.Loader: option 'batch' must be an integer in [1, 16777216], got 'x'"},
  {'Loader threads 1.5', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 2, threads = 1.5} end, "T.data.Loader: option 'threads' must be an integer in [1, 256], got 1.5"},
  {'Loader seed 1.5', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 2, seed = 1.5} end, "T.data.Loader: option 'seed' must be a non-negative integer, got 1.5"},
  {'Loader shuffle 1', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 2, shuffle = 1} end, "T.data.Loader: option 'shuffle' must be true or false, got 1"},
  {'Loader last 1', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 2, last = 1} end, "T.data.Loader: option 'last' must be 'drop', 'keep' or 'pad', got 1"},
  {'Loader layout 1', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 2, layout = 1} end, "T.data.Loader: option 'layout' must be 'contiguous' or 'channels_last', got 1"},
  {'Loader shard 5', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 2, shard = 5} end, "T.data.Loader: option 'shard' must be a table {index =, count =}, got 5"},
  {'Loader shard.index 1.5', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 2, shard = {index = 1.5, count = 2}} end, "T.data.Loader: option 'shard.index' must be an integer in [1, 2], got 1.5"},
  {'Loader transforms 5', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 2, transforms = 5} end, "T.data.Loader: option 'transforms' must be a table of transforms"},
  {'Loader crop 1.5', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 2, transforms = {crop = 1.5}} end, "T.data.Loader: option 'transforms.crop' must be an integer in [1, 65536] or a pair {height, width} of them, got 1.5"},
  {'Loader flip 1', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 2, transforms = {flip = 1}} end, "T.data.Loader: option 'transforms.flip' must be true or false, got 1"},
  {'Loader device 5', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 2, device = 5} end, "T.data.Loader: option 'device' must be a device (from T.devices), got 5"},
  {'lmdb classes 1.5', function() return T.data.lmdb(db_dir .. '/db', {classes = 1.5}) end, "T.data.lmdb: option 'classes' must be a non-negative integer (0: the largest label + 1), got 1.5"},
  {'list classes -1', function() return T.data.list(db_dir .. '/no_list', {classes = -1}) end, "T.data.list: option 'classes' must be a non-negative integer (0: the largest label + 1), got -1"},
  {'list root 5', function() return T.data.list(db_dir .. '/no_list', {root = 5}) end, "T.data.list: option 'root' must be a string, got 5"},
  {'Loader brightness nan', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 2, transforms = {brightness = 0 / 0}} end, "T.data.Loader: option 'transforms.brightness' must be a finite number >= 0, got nan"},
  {'Loader resize -1', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 2, transforms = {resize = -1}} end, "T.data.Loader: option 'transforms.resize' must be an integer in [0, 65536] (0: as stored), got -1"},
  {'Loader mean inf', function() return T.data.Loader{source = T.data.folder(images_dir), batch = 2, transforms = {mean = {math.huge}}} end, "T.data.Loader: option 'transforms.mean' must be a finite number or a list of 1 or 3 of them, got a list whose entry 1 is inf"},
  {'garbage for data.mdb', function() return T.data.lmdb(db_dir .. '/garbage') end, 'cannot open LMDB database ' .. db_dir .. '/garbage: it is not an LMDB database (LMDB: '},
})

-- The command-line tools: a mistake ends with status 1 or 2, a message naming it, no traceback.
local bad_plan = plan_file('return {' .. good_plan .. ', groups = 0}')
local full_folder = S.tmpname('_full')
S.tandem({'gen-images', full_folder, '--classes=1', '--per-class=1', '--min-size=8', '--max-size=8'})
-- {words, status it must end with (1 or 2 when not given), what it must say}
local tool_cases = {
  {{'run', '/no/such.lua'}, 'cannot open /no/such.lua'},
  {{'run', 'recipes/fashion_mnist.lua', '--epochs=0'}, 'recipe option --epochs must be a positive integer, got 0'},
  {{'run', 'recipes/fashion_mnist.lua', '--batch=x'}, "--batch must be a positive integer, got 'x'"},
  {{'run', 'recipes/fashion_mnist.lua', '--bogus=1'}, "unknown option '--bogus'"},
  {{'run', 'recipes/fashion_mnist.lua', '--data=/no/such/folder'}, '--data'},
  {{'run', 'recipes/autoencoder.lua', '--activation=swish'}, "--activation must be 'relu', 'gelu', 'tanh' or 'sigmoid', got 'swish'"},
  {{'run', 'recipes/autoencoder.lua', '--code=0'}, '--code must be a positive integer, got 0'},
  {{'plan'}, 'usage: tandem plan'},
  {{'plan', 'recipes/nets/lenet5.lua'}, '--batch=B is required'},
  {{'bench'}, 'usage: tandem bench'},
  {{'bench', '/no/such.lua'}, 'cannot open /no/such.lua'},
  {{'mkdb'}, 'tandem mkdb: needs SOURCE DB'},
  {{'mkdb', '/no/such/folder', S.tmpname('_db')}, '/no/such/folder: no such file or directory'},
  {{'dbinfo', '/no/such/db'}, '/no/such/db: no such file or directory'},
  {{'import-idx', '/no/a.gz', '/no/b.gz', S.tmpname('_db')}, 'cannot open /no/a.gz'},
  {{'mean', '/no/such/db'}, '/no/such/db: no such file or directory'},
  {{'gen-images'}, 'tandem gen-images: needs DIR'},
  {{'import-interactions', '/no/users.tsv', S.tmpname('_db')}, "cannot open interaction file '/no/users.tsv'"},
  {{'import-interactions', 'README.md', S.tmpname('_db')}, 'README.md:3: 1 tab-separated field(s), 4 expected: user, items, features, label'},
  {{'gen-interactions', S.tmpname('.tsv'), '--items=2', '--classes=3'}, '--items (2) must be at least --classes (3)', status = 2},
  {{'run', 'recipes/compound.lua', '--interactions=/no/users.tsv'}, '--interactions: /no/users.tsv: no such file', status = 2},
  {{'plot'}, 'tandem plot: needs LOG'},
  {{'plot', '/no/such.jsonl'}, 'cannot open /no/such.jsonl'},
  {{'frobnicate'}, "unknown command 'frobnicate' (known: run"},
  {{'help', 'nonsense'}, "tandem help: no command 'nonsense' (known: run"},
  {{'devices', '--bogus'}, 'tandem devices: unknown option --bogus (it takes none but --help)'},
  {{'plan', 'recipes/nets/lenet5.lua', '--batch=64', '--threads=5000'}, 'tandem plan: option --threads must be 0 (the cores split between the devices) to 1024, got 5000', status = 2},
  {{'plan', 'recipes/nets/lenet5.lua', '--batch=64', '--topology=/no/such.lua'}, "tandem plan --topology: topology '/no/such.lua': no such file (known topologies: cluster, cluster_dgx, cpu, dgx1, dgx_a100, dgx_h100, server8_h100_nvl, server8_h100_pcie, server8_pcie, server_k20c", status = 2},
  {{'plan', 'recipes/nets/lenet5.lua', '--batch=64', '--devices=300'}, 'tandem plan: option --devices must be 0 (every count) to 256, got 300', status = 2},
  {{'plan', 'recipes/nets/lenet5.lua', '--batch=64', '--devices=' .. (2 * require('tandem.core').cores() + 1)}, "tandem plan: option --devices=" .. (2 * require('tandem.core').cores() + 1) .. ": this machine's", status = 2},
  {{'plan', 'recipes/nets/lenet5.lua', '--batch=64', '--topology=server8_pcie', '--devices=100'}, "tandem plan: option --devices=100: topology 'server8_pcie' has 8 devices", status = 2},
  {{'plan', 'recipes/nets/lenet5.lua', '--batch=64', '--topology=server8_pcie', '--model=GTX9999'}, "tandem plan --model: topology 'server8_pcie': node 'gpu0': unknown device model 'GTX9999'; known: K20c", status = 2},
  {{'bench', 'recipes/nets/lenet5.lua', '--threads=5000'}, 'tandem bench: option --threads must be 0 (every core) to 1024, got 5000', status = 2},
  {{'bench', 'recipes/nets/lenet5.lua', '--model=GTX9999'}, "tandem bench: unknown option '--model' (known: batch", status = 2},
  {{'run', 'recipes/fashion_mnist.lua', '--plan=/no/such.lua'}, "--plan=/no/such.lua: no such file (--plan takes a file written by `tandem plan --write`, or 'auto')", status = 2},
  {{'run', 'recipes/fashion_mnist.lua', '--plan=' .. bad_plan}, "--plan=" .. bad_plan .. ": field 'groups' must be an integer in [1, 256], got 0", status = 2},
  {{'run', 'recipes/fashion_mnist.lua', '--threads=5000'}, 'option --threads must be 0 (the cores split between the devices) to 1024, got 5000', status = 2},
  {{'run', 'recipes/fashion_mnist.lua', '--groups=300'}, '--groups=300 x --stages=1 make 300 devices; at most 256', status = 2},
  {{'run', 'recipes/fashion_mnist.lua', '--data=docs'}, '--data=docs: docs/train-images-idx3-ubyte.gz: no such file (--data names the folder of Fashion-MNIST', status = 2},
  {{'run', 'recipes/autoencoder.lua', '--data=docs'}, '--data=docs: docs/train-images-idx3-ubyte.gz: no such file', status = 2},
  {{'gen-images', S.tmpname('_gif'), '--format=gif'}, "tandem gen-images: --format must be one of jpg, png, got 'gif'", status = 2},
  {{'gen-images', S.tmpname('_sizes'), '--min-size=100', '--max-size=50'}, 'tandem gen-images: --min-size (100) must not exceed --max-size (50)', status = 2},
  {{'gen-images', full_folder, '--classes=1', '--per-class=1'}, 'tandem gen-images: ' .. full_folder .. ' is not empty; give a new or empty folder, or --overwrite to write into it', status = 1},
  {{'mkdb', images_dir, S.tmpname('_db'), '--encoding=gif'}, "tandem mkdb: --encoding must be one of png, jpeg, jpg, raw, got 'gif'", status = 2},
  {{'import-idx', '/no/a.gz', '/no/b.gz', S.tmpname('_db'), '--encoding=gif'}, "tandem import-idx: --encoding must be one of raw, png, jpeg, jpg, got 'gif'", status = 2},
  {{'dbinfo', images_dir, '--grid=grid'}, "tandem dbinfo: --grid must name a .png file, got 'grid'", status = 2},
}
local tools = {}
for _, c in ipairs(tool_cases) do
  tools[#tools + 1] = {'tandem ' .. table.concat(c[1], ' '), function()
    local out, rc = S.tandem(c[1])
    if rc ~= 1 and rc ~= 2 then error(('exit status %s:\n%s'):format(tostring(rc), out)) end
    if c.status and rc ~= c.status then error(('exit status %s, not %d:\n%s'):format(tostring(rc), c.status, out)) end
    if out:find('stack traceback', 1, true) then error('a traceback:\n' .. out) end
    error(out)
  end, c[2]}
end
suite('command-line tools', tools)

t.test('count', function()
  print(('# %d bad-input cases'):format(total))
  t.ok(total >= 300, 'cases: ' .. total)
  os.execute('rm -rf ' .. S.quote(db_dir) .. ' ' .. S.quote(full_folder))  -- folders: S.cleanup removes files
  S.cleanup()
end)
