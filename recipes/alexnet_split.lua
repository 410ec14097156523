-- The seed's image net — AlexNet-like, 5 convolutions + 3 fully connected layers at 64x64
-- (recipes/nets/alexnet64.lua) — split over devices: by default one group of 2 pipeline stages
-- (model parallel) on 2 CPU devices, 4 micro-batches under 1F1B, the cut chosen by profiling
-- each layer's time and memory (split = 'auto'; the convolutions cost the time, the fully
-- connected layers hold most of the 11 million weights). The data is a synthetic 10-class
-- colour set of 3x64x64 images made in memory (recipes/data/colors.lua).
--   tandem run recipes/alexnet_split.lua --stages=2 --split=auto
--   tandem run recipes/alexnet_split.lua --devices=4 --groups=2 --stages=2 --split=pool3
-- --devices must equal groups x stages (it defaults to that); --memory=512MB caps each device, so a
-- net that does not fit one device trains split; --trace=FILE writes a Chrome trace.
local T = require 'tandem'

local colors = dofile(T.recipe_path('lib/train_colors.lua'))
local opt = T.options(..., colors.defaults{})
colors.train{opt = opt, net = 'alexnet64', size = 64}
