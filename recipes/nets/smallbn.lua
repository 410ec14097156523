-- The small batch-norm CNN for 1x28x28 images (Fashion-MNIST); the peers' `smallbn`:
-- [conv3x3(32)-BN-ReLU] x2 -> maxpool2 -> [conv3x3(64)-BN-ReLU] x2 -> maxpool2
-- -> fc(3136->256) -> ReLU -> dropout(0.5) -> fc(10).
-- Returns a function building a fresh net, and the input shape of one sample.
local nn = require('tandem').nn

local function conv_bn_relu(layers, cin, cout)
  layers[#layers + 1] = nn.Conv2d(cin, cout, 3, {pad = 1, bias = false})
  layers[#layers + 1] = nn.BatchNorm2d(cout)
  layers[#layers + 1] = nn.ReLU()
end

return function(opt)
  opt = opt or {}
  local layers = {}
  conv_bn_relu(layers, 1, 32)
  conv_bn_relu(layers, 32, 32)
  layers[#layers + 1] = nn.MaxPool2d(2)
  conv_bn_relu(layers, 32, 64)
  conv_bn_relu(layers, 64, 64)
  layers[#layers + 1] = nn.MaxPool2d(2)
  layers[#layers + 1] = nn.Flatten()
  layers[#layers + 1] = nn.Linear(64 * 7 * 7, 256)
  layers[#layers + 1] = nn.ReLU()
  layers[#layers + 1] = nn.Dropout(opt.dropout or 0.5)
  layers[#layers + 1] = nn.Linear(256, opt.classes or 10)
  return nn.Sequential(layers), {1, 28, 28}
end
