-- AlexNet for 3x224x224 images, the one-tower layout of torchvision's alexnet: the variant of
-- Krizhevsky's "One weird trick for parallelizing convolutional neural networks" (2014), with
-- 64-192-384-256-256 conv channels and no local response normalisation (the 2012 two-tower
-- net has 96-256-384-384-256 channels and LRN after conv1 and conv2); alexnet64.lua is this
-- net scaled down to 64x64. (torchvision's adaptive average pooling to 6x6 is the identity at
-- 224x224 and is left out.)
-- conv11x11/s4/p2(64)-ReLU-maxpool3/s2 -> conv5x5/p2(192)-ReLU-maxpool3/s2 -> conv3x3/p1(384)
-- -ReLU -> conv3x3/p1(256)-ReLU -> conv3x3/p1(256)-ReLU -> maxpool3/s2 -> [dropout-fc(9216->
-- 4096)-ReLU] -> [dropout-fc(4096->4096)-ReLU] -> fc1000.
-- Spatial: 224 -> 55 -> 27 -> 27 -> 13 -> 13 -> 6.
-- 61,100,840 parameters for 1000 classes (= torchvision); 1.43 GFLOPs per image forward as
-- `tandem bench` counts them (a multiply-add is 2: 0.71 G multiply-adds).
local nn = require('tandem').nn

return function(opt)
  opt = opt or {}
  return nn.Sequential{
    nn.Conv2d(3, 64, 11, {stride = 4, pad = 2}), nn.ReLU(), nn.MaxPool2d(3, {stride = 2}),
    nn.Conv2d(64, 192, 5, {pad = 2}), nn.ReLU(), nn.MaxPool2d(3, {stride = 2}),
    nn.Conv2d(192, 384, 3, {pad = 1}), nn.ReLU(),
    nn.Conv2d(384, 256, 3, {pad = 1}), nn.ReLU(),
    nn.Conv2d(256, 256, 3, {pad = 1}), nn.ReLU(), nn.MaxPool2d(3, {stride = 2}),
    nn.Flatten(),
    nn.Dropout(0.5), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(),
    nn.Dropout(0.5), nn.Linear(4096, 4096), nn.ReLU(),
    nn.Linear(4096, opt.classes or 1000),
  }, {3, 224, 224}
end
