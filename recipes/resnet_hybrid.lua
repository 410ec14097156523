-- ResNet-20 (recipes/nets/resnet20.lua) trained hybrid-parallel: data parallel across worker
-- groups, pipelined model parallel inside each group. The default is 2 groups x 2 stages x 4
-- micro-batches under 1F1B on 4 CPU devices of one kernel thread each, stages cut by profiling
-- (split = 'auto'). There is no CIFAR here: the data is a synthetic 10-class colour set of
-- 3x32x32 images made in memory (recipes/data/colors.lua).
--   tandem run recipes/resnet_hybrid.lua --groups=2 --stages=2 --micro_batches=4 --pipeline=1f1b
--   tandem run recipes/resnet_hybrid.lua --devices=2 --groups=1 --stages=2 --split=stage2_1,relu6
-- --devices must equal groups x stages (it defaults to that). --batch_norm=deferred folds the
-- whole batch's statistics into the running ones once per step (evaluation then matches one
-- device); --batch_norm=sync --pipeline=gpipe normalises with the whole global batch's
-- statistics (exact against one device, at the cost of gathering them); --trace=FILE writes a Chrome trace of every worker (Perfetto, chrome://tracing).
local T = require 'tandem'

local colors = dofile(T.recipe_path('lib/train_colors.lua'))
local opt = T.options(..., colors.defaults{batch = 128, train = 2560, test = 512, lr = 0.1, groups = 2})
colors.train{opt = opt, net = 'resnet20', size = 32}
