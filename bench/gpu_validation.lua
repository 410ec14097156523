-- The planner's GPU figures against measured and published ones (issue 20's validation tables,
-- docs/planner.md), in one command:
--   build/tandem run bench/gpu_validation.lua [--one_gpu]
-- First one GPU (below), then, unless --one_gpu, bench/gpu_scaling.lua's tables: scaling to 8
-- GPUs, all-reduce bus bandwidth and the seeds' experiments.
-- Each row: a figure (its source, machine, net, batch, precision), the planner's simulated
-- step of that net on that GPU (T.plan.simulate, one device, the analytic costs), and the
-- error. `fitted` marks the figures the model's constants were fitted to (the H200's in
-- core/plan/analytic_costs.cpp, the V100's and P100's in hardware.cpp); the others check it. Then the ratio of VGG-16's time per
-- image to ResNet-50's, where a source gives both.
local T = require 'tandem'

local opt = T.options(..., {one_gpu = false})

local nets_dir = (T.recipe_dir or 'bench') .. '/../recipes/nets/'

local h200 = 'Tandem on an H200, bench/measured/h200-2026-11-26'
local h200_tf32 = 'Tandem on an H200, bench/measured/h200-2026-11-27'
local torch_tf32 = 'PyTorch 2.11 on an H200, bench/measured/h200-2026-11-27/peers_224_tf32.txt'
local dle = 'NVIDIA DeepLearningExamples, PyTorch ResNet-50 v1.5 README (21.03 container)'
local tf = 'TensorFlow benchmarks (tf_cnn_benchmarks, May 2017, synthetic data), tensorflow.org'
-- {source, model, net, batch, precision, images/s, fitted}
local figures = {
  {h200 .. '/layers.txt', 'H200', 'resnet50', 8, 'fp32', 439.9, true},
  {h200 .. '/layers.txt', 'H200', 'resnet50', 64, 'fp32', 830.2, true},
  {h200 .. '/layers.txt', 'H200', 'vgg16', 8, 'fp32', 424.4, true},
  {h200 .. '/layers.txt', 'H200', 'vgg16', 64, 'fp32', 589.1, true},
  {h200 .. '/layers.txt', 'H200', 'alexnet224', 8, 'fp32', 3163, true},
  {h200 .. '/layers.txt', 'H200', 'alexnet224', 64, 'fp32', 8319, true},
  {h200 .. '/peers_224.txt', 'H200', 'alexnet224', 128, 'fp32', 10012, false},
  -- Since the fit: the pooling kernels in 32-bit indices and cuDNN's workspace up to 8 GiB
  -- (configs.txt's runs with 16 GiB, as fast), FP32 and TF32, nchw.
  {h200_tf32 .. '/configs.txt', 'H200', 'resnet50', 64, 'fp32', 64 / 0.076108, false},
  {h200_tf32 .. '/configs.txt', 'H200', 'vgg16', 64, 'fp32', 64 / 0.083568, false},
  {h200_tf32 .. '/configs.txt', 'H200', 'alexnet224', 64, 'fp32', 64 / 0.006588, false},
  {h200_tf32 .. '/configs.txt', 'H200', 'resnet50', 64, 'tf32', 64 / 0.036498, false},
  {h200_tf32 .. '/configs.txt', 'H200', 'vgg16', 64, 'tf32', 64 / 0.055222, false},
  {h200_tf32 .. '/configs.txt', 'H200', 'alexnet224', 64, 'tf32', 64 / 0.005936, false},
  {h200_tf32 .. '/workspace.txt', 'H200', 'resnet50', 128, 'tf32', 1918.4, false},
  {h200_tf32 .. '/workspace.txt', 'H200', 'vgg16', 128, 'tf32', 1202.1, false},
  {h200_tf32 .. '/workspace.txt', 'H200', 'alexnet224', 128, 'tf32', 13424.5, false},
  -- PyTorch 2.11 on the same machines, TF32, channels-last (its faster layout there).
  {torch_tf32, 'H200', 'resnet50', 64, 'tf32', 2685.4, false},
  {torch_tf32, 'H200', 'vgg16', 64, 'tf32', 1727.0, false},
  {torch_tf32, 'H200', 'alexnet224', 128, 'tf32', 22461.0, false},
  {dle, 'V100-SXM2', 'resnet50', 112, 'fp32', 367, true},
  {dle, 'V100-SXM2', 'resnet50', 256, 'fp16', 1200, false},
  {dle, 'A100-80GB', 'resnet50', 256, 'tf32', 938, false},
  {dle, 'A100-80GB', 'resnet50', 256, 'fp16', 2470, false},
  {tf, 'P100', 'resnet50', 64, 'fp32', 219, true},
  {tf, 'P100', 'vgg16', 64, 'fp32', 154, true},
  {tf, 'P100', 'alexnet224', 512, 'fp32', 2987, true},
  {tf .. ', Google Compute Engine', 'K80', 'resnet50', 64, 'fp32', 51.9, false},
  {tf .. ', Google Compute Engine', 'K80', 'vgg16', 32, 'fp32', 35.4, false},
  {tf .. ', Google Compute Engine', 'K80', 'alexnet224', 512, 'fp32', 656, false},
}

local nets = {}
local function net_of(name)
  if not nets[name] then
    local net, sample = dofile(nets_dir .. name .. '.lua')({})
    nets[name] = {net = net, sample = sample, costs = {}}
  end
  return nets[name]
end

-- The simulated images/s of one figure's net, batch and precision on one GPU of its model.
local function simulated(model, name, batch, precision)
  local n = net_of(name)
  n.costs[precision] = n.costs[precision]
                       or T.plan.costs{net = n.net, sample = n.sample, cost = 'analytic', precision = precision}
  local topology = T.plan.topology{name = 'one ' .. model, nodes = {{name = 'gpu0', device = model, memory = 2^40}}}
  local r = T.plan.simulate{costs = n.costs[precision], batch = batch, topology = topology, plan = {}}
  return r.images_per_s
end

print('| source | GPU | net | batch | precision | figure img/s | simulated img/s | error | |')
print('|---|---|---|---|---|---|---|---|---|')
local per_image = {}
local worst_checked = 0
for _, f in ipairs(figures) do
  local source, model, name, batch, precision, figure, fitted = unpack(f)
  local s = simulated(model, name, batch, precision)
  local err = s / figure - 1
  if not fitted then worst_checked = math.max(worst_checked, math.abs(err)) end
  print(('| %s | %s | %s | %d | %s | %.0f | %.0f | %+.1f%% | %s |'):format(source, model, name, batch, precision, figure, s,
                                                                       100 * err, fitted and 'fitted' or 'check'))
  -- Paired within one source, GPU, precision and batch.
  local key = ('%s|%s|%s|%d'):format(source, model, precision, batch)
  per_image[key] = per_image[key] or {}
  per_image[key][name] = per_image[key][name] or {figure = 1 / figure, simulated = 1 / s}
end
print(('\nlargest error of a checked figure: %.1f%%\n'):format(100 * worst_checked))
print('| source | GPU | precision | batch | VGG-16 / ResNet-50 time per image, figure | simulated | error |')
print('|---|---|---|---|---|---|---|')
local keys = {}  -- in a fixed order, so a rerun prints the same table
for key in pairs(per_image) do keys[#keys + 1] = key end
table.sort(keys)
for _, key in ipairs(keys) do
  local by_net = per_image[key]
  local v, r = by_net.vgg16, by_net.resnet50
  if v and r then
    local source, model, precision, batch = key:match('^(.*)|(.*)|(.*)|(.*)$')
    local figure, sim = v.figure / r.figure, v.simulated / r.simulated
    print(('| %s | %s | %s | %s | %.2f | %.2f | %+.1f%% |'):format(source, model, precision, batch, figure, sim,
                                                                100 * (sim / figure - 1)))
  end
end

if not opt.one_gpu then
  print()
  assert(loadfile((T.recipe_dir or 'bench') .. '/gpu_scaling.lua'))()
end
