-- A synthetic colour image set made in memory, for recipes that need CIFAR-like data on a
-- machine without CIFAR: `classes` classes, each a hue and a stripe orientation and frequency,
-- every image with a random stripe phase, a random brightness and uniform pixel noise. Easy for
-- a CNN (ResNet-20 reaches 98 % test accuracy in 2 epochs of 2560): it shows that training works.
--   local colors = dofile(T.recipe_path('data/colors.lua'))
--   local train = colors{n = 2560, size = 32, classes = 10, seed = 1}   -- a T.data.dataset
-- The same (n, size, classes, seed) give the same images on every machine (LuaJIT's
-- math.random is a fixed generator for a given seed).
local T = require 'tandem'

return function(o)
  local n, size, classes = o.n, o.size or 32, o.classes or 10
  math.randomseed(o.seed or 1)
  local pixels, labels = {}, {}
  local k = 0
  for i = 1, n do
    local c = math.random(0, classes - 1)
    labels[i] = c
    local hue = 2 * math.pi * c / classes
    local angle = math.pi * c / classes
    local freq = 2 * math.pi * (2 + c % 3) / size
    local dx, dy = freq * math.cos(angle), freq * math.sin(angle)
    local phase = 2 * math.pi * math.random()
    local gain = 0.7 + 0.6 * math.random()
    for ch = 0, 2 do
      local tint = 0.6 * math.cos(hue + ch * 2.094)
      for y = 0, size - 1 do
        for x = 0, size - 1 do
          k = k + 1
          pixels[k] = gain * (tint + 0.7 * math.sin(dx * x + dy * y + phase)) + (math.random() - 0.5)
        end
      end
    end
  end
  return T.data.dataset(T.tensor(pixels, {n, 3, size, size}), T.tensor(labels, nil, {dtype = 'i32'}))
end
