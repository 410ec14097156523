-- A scaled AlexNet for 3x64x64 images; the peers' `alexnet64`:
-- conv5x5/s2/p2(64)-ReLU-maxpool3/s2 -> conv5x5/p2(192)-ReLU-maxpool3/s2 -> conv3x3/p1(384)-ReLU
-- -> conv3x3/p1(256)-ReLU -> conv3x3/p1(256)-ReLU -> maxpool3/s2 -> [dropout-fc(2304->1024)-ReLU]
-- -> [dropout-fc(1024->1024)-ReLU] -> fc10.  Spatial: 64 -> 32 -> 15 -> 15 -> 7 -> 7 -> 3.
local nn = require('tandem').nn

return function(opt)
  opt = opt or {}
  return nn.Sequential{
    nn.Conv2d(3, 64, 5, {stride = 2, pad = 2}), nn.ReLU(), nn.MaxPool2d(3, {stride = 2}),
    nn.Conv2d(64, 192, 5, {pad = 2}), nn.ReLU(), nn.MaxPool2d(3, {stride = 2}),
    nn.Conv2d(192, 384, 3, {pad = 1}), nn.ReLU(),
    nn.Conv2d(384, 256, 3, {pad = 1}), nn.ReLU(),
    nn.Conv2d(256, 256, 3, {pad = 1}), nn.ReLU(), nn.MaxPool2d(3, {stride = 2}),
    nn.Flatten(),
    nn.Dropout(0.5), nn.Linear(256 * 3 * 3, 1024), nn.ReLU(),
    nn.Dropout(0.5), nn.Linear(1024, 1024), nn.ReLU(),
    nn.Linear(1024, opt.classes or 10),
  }, {3, 64, 64}
end
