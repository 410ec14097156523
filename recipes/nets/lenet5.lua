-- LeNet-5 as Caffe trains it, for 1x28x28 images; the peers' `lenet5`:
-- conv5x5(20) -> maxpool2 -> conv5x5(50) -> maxpool2 -> fc500 -> ReLU -> fc10 (no conv ReLUs).
local nn = require('tandem').nn

return function(opt)
  opt = opt or {}
  return nn.Sequential{
    nn.Conv2d(1, 20, 5), nn.MaxPool2d(2),
    nn.Conv2d(20, 50, 5), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(50 * 4 * 4, 500), nn.ReLU(),
    nn.Linear(500, opt.classes or 10),
  }, {1, 28, 28}
end
