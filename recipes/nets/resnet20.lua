-- ResNet-20 for 3x32x32 images (He et al. 2016, CIFAR); the peers' `resnet20`:
-- conv3x3(16)-BN-ReLU, three stages of three basic blocks (16, 32, 64 channels; stride 2 at
-- the first block of stages 2 and 3, with a 1x1 conv + BN projection shortcut), global average
-- pooling, fc10. 272,474 parameters.
local nn = require('tandem').nn

local function basic_block(cin, cout, stride)
  local body = {
    nn.Conv2d(cin, cout, 3, {stride = stride, pad = 1, bias = false}), nn.BatchNorm2d(cout), nn.ReLU(),
    nn.Conv2d(cout, cout, 3, {pad = 1, bias = false}), nn.BatchNorm2d(cout),
  }
  local shortcut
  if stride ~= 1 or cin ~= cout then
    shortcut = {nn.Conv2d(cin, cout, 1, {stride = stride, bias = false}), nn.BatchNorm2d(cout)}
  end
  return nn.Residual{body = body, shortcut = shortcut}
end

return function(opt)
  opt = opt or {}
  local n = opt.depth_blocks or 3
  local layers = {nn.Conv2d(3, 16, 3, {pad = 1, bias = false}), nn.BatchNorm2d(16), nn.ReLU()}
  local cin = 16
  for _, stage in ipairs{{16, 1}, {32, 2}, {64, 2}} do
    local cout, stride = stage[1], stage[2]
    for i = 1, n do
      layers[#layers + 1] = basic_block(cin, cout, i == 1 and stride or 1)
      layers[#layers + 1] = nn.ReLU()
      cin = cout
    end
  end
  layers[#layers + 1] = nn.GlobalAvgPool2d()
  layers[#layers + 1] = nn.Flatten()
  layers[#layers + 1] = nn.Linear(64, opt.classes or 10)
  return nn.Sequential(layers), {3, 32, 32}
end
