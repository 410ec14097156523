-- A small batch-norm CNN for colour images of any size (the JPEG recipe's net):
-- [conv3x3(32)-BN-ReLU-maxpool2] -> [conv3x3(64)-BN-ReLU-maxpool2] -> [conv3x3(128)-BN-ReLU]
-- -> global average pool -> fc(classes). The global pool makes the input size free.
-- Returns a function building a fresh net, and the input shape of one sample; opt.channels: 3
-- (colour, the default) or 1 (greyscale).
local nn = require('tandem').nn

return function(opt)
  opt = opt or {}
  local size = opt.size or 64
  local layers = {}
  local channels = opt.channels or 3
  local cin = channels
  for i, cout in ipairs{32, 64, 128} do
    layers[#layers + 1] = nn.Conv2d(cin, cout, 3, {pad = 1, bias = false})
    layers[#layers + 1] = nn.BatchNorm2d(cout)
    layers[#layers + 1] = nn.ReLU()
    if i < 3 then layers[#layers + 1] = nn.MaxPool2d(2) end
    cin = cout
  end
  layers[#layers + 1] = nn.GlobalAvgPool2d()
  layers[#layers + 1] = nn.Flatten()
  layers[#layers + 1] = nn.Linear(128, opt.classes or 10)
  return nn.Sequential(layers), {channels, size, size}
end
