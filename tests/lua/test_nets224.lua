-- The ImageNet-size reference nets (recipes/nets/resnet50.lua, vgg16.lua, alexnet224.lua):
-- each builds with torchvision's parameter count for 1000 classes, gives {batch, classes}, and
-- takes one training step on a CPU device with a finite loss. About 45 s on 2 cores, most of
-- it drawing initial weights (each net is initialised three times: built at 1000 classes,
-- built at 10, and again by the engine from its seed; VGG-16's 138 M values take ~7 s each).
local t = require 'tandem.test'
local T = require 'tandem'
local nn = T.nn

local nets = {
  {name = 'resnet50', parameters = 25557032, top_level = 39},
  {name = 'vgg16', parameters = 138357544},
  {name = 'alexnet224', parameters = 61100840},
}

local function build(name, opt) return dofile('recipes/nets/' .. name .. '.lua')(opt) end

t.test('the 224x224 nets have the reference sizes and output shapes', function()
  for _, want in ipairs(nets) do
    local net, input = build(want.name)
    t.eq(input, {3, 224, 224}, want.name)
    t.eq(net:parameter_count(), want.parameters, want.name)
    t.eq(net:output_shape{2, 3, 224, 224}, {2, 1000}, want.name)
    -- Fine-grained top level for the pipeline partitioner: stem conv, BN, ReLU, pool, then
    -- 16 x (bottleneck block, ReLU), pool, flatten, fc.
    if want.top_level then t.eq(net:size(), want.top_level, want.name) end
    net = nil
    collectgarbage()  -- VGG-16 alone holds 550 MB of parameters
  end
end)

t.test('one training step of each 224x224 net gives a finite loss', function()
  for _, want in ipairs(nets) do
    local net, input = build(want.name, {classes = 10})
    t.eq(net:output_shape{2, 3, 224, 224}, {2, 10}, want.name)
    local built = T.now()
    local engine = T.Engine{net = net, loss = nn.CrossEntropy(), devices = T.devices('cpu', 1),
                            optim = T.optim.SGD{lr = 0.01, momentum = 0.9}, seed = 1}
    local started = T.now()
    local setup = started - built
    local r = engine:step(T.randn({2, input[1], input[2], input[3]}, 7),
                          T.tensor({3, 8}, nil, {dtype = 'i32'}))
    t.eq(r.samples, 2, want.name)
    t.ok(r.loss == r.loss and r.loss > 0 and r.loss < math.huge,
         ('%s: loss %s'):format(want.name, tostring(r.loss)))
    print(('# %s: loss %.4f, engine %.2f s, step %.2f s')
          :format(want.name, r.loss, setup, T.now() - started))
    net, engine = nil, nil
    collectgarbage()
  end
end)
