-- ResNet-50 for 3x224x224 images (He et al. 2016, "Deep Residual Learning for Image
-- Recognition", ImageNet); the layout of torchvision's resnet50 (v1.5: the stride-2 of a
-- downsampling block sits on its 3x3 conv, not on the first 1x1):
-- conv7x7/s2/p3(64)-BN-ReLU-maxpool3/s2/p1, four stages of bottleneck blocks (3, 4, 6, 3 blocks;
-- 1x1(w)-BN-ReLU-3x3(w)-BN-ReLU-1x1(4w)-BN with w = 64, 128, 256, 512; stride 2 at the first
-- block of stages 2-4; a 1x1 conv + BN projection shortcut where the shape changes), global
-- average pooling, fc1000. Spatial: 224 -> 112 -> 56 -> 56 -> 28 -> 14 -> 7 -> 1.
-- 25,557,032 parameters for 1000 classes (= torchvision); 8.18 GFLOPs per image forward as
-- `tandem bench` counts them (a multiply-add is 2; the "4.1 GFLOPs" often quoted are
-- multiply-adds).
-- Every residual block (and the ReLU after it) is a top-level layer, as are the stem's conv,
-- BN, ReLU and pooling, so that a pipeline partitioner can cut between any two of them.
local nn = require('tandem').nn

local function bottleneck(cin, width, stride)
  local cout = 4 * width
  local body = {
    nn.Conv2d(cin, width, 1, {bias = false}), nn.BatchNorm2d(width), nn.ReLU(),
    nn.Conv2d(width, width, 3, {stride = stride, pad = 1, bias = false}), nn.BatchNorm2d(width),
    nn.ReLU(),
    nn.Conv2d(width, cout, 1, {bias = false}), nn.BatchNorm2d(cout),
  }
  local shortcut
  if stride ~= 1 or cin ~= cout then
    shortcut = {nn.Conv2d(cin, cout, 1, {stride = stride, bias = false}), nn.BatchNorm2d(cout)}
  end
  return nn.Residual{body = body, shortcut = shortcut}
end

return function(opt)
  opt = opt or {}
  local layers = {
    nn.Conv2d(3, 64, 7, {stride = 2, pad = 3, bias = false}), nn.BatchNorm2d(64), nn.ReLU(),
    nn.MaxPool2d(3, {stride = 2, pad = 1}),
  }
  local cin = 64
  for _, stage in ipairs{{64, 3, 1}, {128, 4, 2}, {256, 6, 2}, {512, 3, 2}} do
    local width, blocks, stride = stage[1], stage[2], stage[3]
    for i = 1, blocks do
      layers[#layers + 1] = bottleneck(cin, width, i == 1 and stride or 1)
      layers[#layers + 1] = nn.ReLU()
      cin = 4 * width
    end
  end
  layers[#layers + 1] = nn.GlobalAvgPool2d()
  layers[#layers + 1] = nn.Flatten()
  layers[#layers + 1] = nn.Linear(cin, opt.classes or 1000)
  return nn.Sequential(layers), {3, 224, 224}
end
