-- VGG-16 for 3x224x224 images (Simonyan & Zisserman 2015, "Very Deep Convolutional Networks
-- for Large-Scale Image Recognition", configuration D, no batch norm); the layout of
-- torchvision's vgg16: thirteen conv3x3/p1-ReLU in five blocks (64 x2, 128 x2, 256 x3, 512 x3,
-- 512 x3), each block ending in maxpool2/s2 (224 -> 112 -> 56 -> 28 -> 14 -> 7), then
-- fc(25088->4096)-ReLU-dropout, fc(4096->4096)-ReLU-dropout (p = 0.5, as in the paper), fc1000.
-- 138,357,544 parameters for 1000 classes (= torchvision); 30.9 GFLOPs per image forward as
-- `tandem bench` counts them (a multiply-add is 2: 15.5 G multiply-adds).
local nn = require('tandem').nn

return function(opt)
  opt = opt or {}
  local layers, cin = {}, 3
  for _, block in ipairs{{64, 2}, {128, 2}, {256, 3}, {512, 3}, {512, 3}} do
    local cout, convs = block[1], block[2]
    for _ = 1, convs do
      layers[#layers + 1] = nn.Conv2d(cin, cout, 3, {pad = 1})
      layers[#layers + 1] = nn.ReLU()
      cin = cout
    end
    layers[#layers + 1] = nn.MaxPool2d(2, {stride = 2})
  end
  for _, layer in ipairs{
    nn.Flatten(),
    nn.Linear(512 * 7 * 7, 4096), nn.ReLU(), nn.Dropout(0.5),
    nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(0.5),
    nn.Linear(4096, opt.classes or 1000),
  } do
    layers[#layers + 1] = layer
  end
  return nn.Sequential(layers), {3, 224, 224}
end
