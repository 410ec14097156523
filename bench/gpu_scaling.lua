-- The planner's multi-GPU model against published figures (issue 20, item 4): scaling from 1 to
-- 8 GPUs on DGX-class machines, nccl-tests' all-reduce bus bandwidth, and the seeds'
-- experiments re-run in simulation. Prints markdown tables (docs/planner.md, "Links,
-- collectives and topologies"):
--   build/tandem run bench/gpu_scaling.lua [--only=scaling|nccl|seeds]
-- Every published figure is listed with its source; nothing here is measured. The simulated
-- compute is the analytic model's, in the precision the figure was taken in (mixed precision
-- as fp16).
local T = require 'tandem'

local opt = T.options(..., {only = ''})
local nets_dir = (T.recipe_dir or 'bench') .. '/../recipes/nets/'

local nets = {}
local function net(name, precision)
  local key = name .. ' ' .. (precision or 'fp32')
  if not nets[key] then
    local n, sample = dofile(nets_dir .. name .. '.lua')()
    nets[key] = {net = n, sample = sample,
                 costs = T.plan.costs{net = n, sample = sample, cost = 'analytic', precision = precision}}
  end
  return nets[key]
end

local function images_per_s(name, topology, batch, plan, extra, precision)
  local n = net(name, precision)
  local args = {costs = n.costs, batch = batch, topology = topology, plan = plan}
  for k, v in pairs(extra or {}) do args[k] = v end
  return T.plan.simulate(args).images_per_s
end

local function devices(count)
  local list = {}
  for i = 0, count - 1 do list[#list + 1] = i end
  return list
end

local function err(simulated, published) return ('%+.1f%%'):format(100 * (simulated / published - 1)) end

local DLE = 'NVIDIA DeepLearningExamples, PyTorch ResNet50 v1.5 README (pytorch-21.03 container)'

-- Scaling 1 -> 8 GPUs, pure data parallel, per-GPU batch fixed (weak scaling, as the README's
-- multi-GPU runs are).
local function scaling()
  print('### ResNet-50 data parallel, 1 to 8 GPUs\n')
  print('| source | machine | net | batch per GPU | precision | published 1 -> 8 GPUs | '
        .. 'simulated 1 -> 8 GPUs | simulated 8-GPU all-reduce exposed | error | '
        .. "with NCCL's choice (auto): 8 GPUs, exposed, error |")
  print('|---|---|---|---|---|---|---|---|---|---|')
  -- The batches per GPU are the README's benchmark configurations (ConvNets/configs.yml).
  local rows = {
    {'dgx1', {model = 'V100-SXM2'}, 'DGX-1 V100 16GB', 'fp32', 367, 2855, 112},
    {'dgx1', {model = 'V100-SXM2'}, 'DGX-1 V100 32GB', 'fp32', 356, 2766, 112},
    {'dgx_a100', {model = 'A100-80GB'}, 'DGX A100 80GB', 'tf32', 938, 7248, 256},
    {'dgx1', {model = 'V100-SXM2'}, 'DGX-1 V100 16GB', 'fp16', 1200, 8322, 256},
    {'dgx_a100', {model = 'A100-80GB'}, 'DGX A100 80GB', 'fp16', 2470, 16621, 256},
  }
  for _, r in ipairs(rows) do
    local topology = T.plan.topology(r[1], r[2])
    local b, precision = r[7], r[4]
    local one = images_per_s('resnet50', topology, b, {groups = 1, devices = {0}}, nil, precision)
    local n = net('resnet50', precision)
    local s8 = T.plan.simulate{costs = n.costs, batch = 8 * b, topology = topology,
                               plan = {groups = 8, devices = devices(8)}}
    local auto = T.plan.simulate{costs = n.costs, batch = 8 * b, topology = topology,
                                 plan = {groups = 8, devices = devices(8)}, algorithm = 'auto'}
    local published, simulated = r[6] / r[5], s8.images_per_s / one
    print(('| %s | %s | ResNet-50 | %d | %s | '
           .. '%d -> %d img/s: %.2fx | %.0f -> %.0f img/s: %.2fx | %.1f ms of %.1f | %s | '
           .. '%.0f img/s: %.2fx, %.1f ms, %s |')
          :format(DLE, r[3], b, precision, r[5], r[6], published, one, s8.images_per_s, simulated,
                  s8.exposed_comm_ms, s8.step_ms, err(simulated, published), auto.images_per_s,
                  auto.images_per_s / one, auto.exposed_comm_ms, err(auto.images_per_s / one, published)))
  end
  print()
end

-- nccl-tests' all_reduce_perf: busbw = algbw x 2 (n - 1) / n, algbw = bytes / time. 'ring' is
-- NCCL_ALGO=RING (played with the Simple protocol, NCCL's choice at these sizes); 'auto' NCCL's
-- own choice of algorithm and protocol (nccl_tuning.h), named as it ran.
local function nccl()
  print('### All-reduce bus bandwidth (nccl-tests all_reduce_perf)\n')
  print('| source | machine | GPUs | message | algorithm | published busbw | simulated busbw | error |')
  print('|---|---|---|---|---|---|---|---|')
  local rows = {
    {'dgx_h100', nil, 'DGX H100 (8x H100 SXM5)', 8, 4 * 2^30, 'ring', 370,
     "NVIDIA/nccl-tests issue #212 (NCCL's maintainer: NCCL_ALGO=RING reaches ~370 GB/s of "
     .. "450 GB/s line rate)"},
    {'dgx_h100', nil, 'DGX H100 (8x H100 SXM5)', 8, 4 * 2^30, 'auto', 480,
     'same issue (NVLink SHARP, the default all-reduce on H100 NVSwitch: busbw ~480 GB/s)'},
    {'dgx_a100', nil, '8x A100 SXM4 80GB on NVSwitch (HPE Apollo 6500)', 8, 2^30, 'ring', 200,
     'NVIDIA/nccl-tests issue #149 (NCCL 2.17-2.18, "a busbw of ~200 GB/s", up to 1 GiB)'},
    {'cluster_dgx', {nodes = 3, model = 'a100', nics = 4}, '3 servers of 8x A100 SXM4 40GB, 4 HDR NICs each',
     24, 128 * 2^20, 'ring', 96,
     'NVIDIA/nccl-tests issue #119 (peak ~96 GB/s at 128 MB, average 84.8; 100 GB/s theoretical)'},
  }
  for _, r in ipairs(rows) do
    local topology = T.plan.topology(r[1], r[2])
    local ms, ran = T.plan.all_reduce(topology, r[5], r[4], r[6])
    local busbw = r[5] / (ms * 1e6) * 2 * (r[4] - 1) / r[4]
    local algorithm = r[6] == 'auto' and ('auto (%s)'):format(ran) or r[6]
    local size = r[5] >= 2^30 and ('%d GiB'):format(r[5] / 2^30) or ('%d MiB'):format(r[5] / 2^20)
    print(('| %s | %s | %d | %s | %s | %d GB/s | %.0f GB/s | %s |'):format(r[8], r[3], r[4], size, algorithm,
                                                                          r[7], busbw, err(busbw, r[7])))
  end
  print()
  -- What NCCL's model chooses by size, and the simulated time against the ring with Simple (no
  -- published figure: nccl-tests' small-message rows we found were not on these machines).
  print('#### NCCL\'s choice by message size (simulated, no published figure)\n')
  print('| machine | GPUs | message | NCCL\'s choice | simulated time | ring/Simple time |')
  print('|---|---|---|---|---|---|')
  local machines = {
    {'dgx_h100', nil, 'DGX H100', 8},
    {'dgx_a100', nil, 'DGX A100', 8},
    {'cluster_dgx', {nodes = 16, model = 'a100'}, '16 DGX A100 (HDR)', 128},
  }
  for _, m in ipairs(machines) do
    local topology = T.plan.topology(m[1], m[2])
    for _, bytes in ipairs({8 * 2^10, 256 * 2^10, 8 * 2^20, 256 * 2^20}) do
      local ms, ran = T.plan.all_reduce(topology, bytes, m[4], 'auto')
      local ring = T.plan.all_reduce(topology, bytes, m[4], 'ring')
      local size = bytes >= 2^20 and ('%d MiB'):format(bytes / 2^20) or ('%d KiB'):format(bytes / 2^10)
      print(('| %s | %d | %s | %s | %.1f us | %.1f us |'):format(m[3], m[4], size, ran, ms * 1e3, ring * 1e3))
    end
  end
  print()
end

local function best(plans, test)
  local found
  for _, p in ipairs(plans) do
    if test(p) and (not found or p.images_per_s > found.images_per_s) then found = p end
  end
  return found
end

local function seeds()
  print("### Seed 000: Tencent's framework, 4 Tesla K20c on PCIe 2.0 (server_k20c)\n")
  print('AlexNet (alexnet224), a batch of 128 per group (weak scaling, as the seed\'s worker groups '
        .. 'each train on their own mini-batch), FP32, ring all-reduce; against one K20c at batch 128.\n')
  print('| layout | published speed-up (issue 20, from the seed\'s source article) | simulated, buckets during '
        .. 'backward | simulated, after backward (no overlap) | simulated, through a parameter server on GPU 0 |')
  print('|---|---|---|---|---|')
  local k20 = T.plan.topology('server_k20c')
  local one = images_per_s('alexnet224', k20, 128, {groups = 1, devices = {0}})
  local layouts = {
    {'2 GPUs, data parallel (2x1x1)', '-', {groups = 2, devices = {0, 1}}, 256},
    {'2 GPUs, model parallel (1x2x1)', '-', {groups = 1, stages = 2, devices = {0, 1}}, 128},
    {'4 GPUs, data parallel (4x1x1)', '2.67x', {groups = 4, devices = devices(4)}, 512},
    {'4 GPUs, data + model (2x2x1)', '2.52x', {groups = 2, stages = 2, devices = devices(4)}, 256},
  }
  for _, l in ipairs(layouts) do
    local during = images_per_s('alexnet224', k20, l[4], l[3]) / one
    local after = images_per_s('alexnet224', k20, l[4], l[3], {overlap = false}) / one
    local groups = l[3].groups > 1
    local server = groups and images_per_s('alexnet224', k20, l[4], l[3], {overlap = false, algorithm = 'server'}) / one
    print(('| %s | %s | %.2fx | %.2fx | %s |'):format(l[1], l[2], during, after,
                                                     server and ('%.2fx'):format(server) or '-'))
  end
  print()

  print('### Seed 001: GroPipe on an 8-GPU server (server8_pcie: V100 PCIe; the thesis does not '
        .. 'name its GPUs)\n')
  print('| net | all-reduce | buckets | best data parallel | best hybrid | pure GPipe | hybrid vs DP '
        .. '(GroPipe: R50 +59.6%, VGG +111.2%) | hybrid vs DP through GPU 0 (nn.DataParallel) | hybrid vs GPipe '
        .. '(GroPipe: R50 +14.3%, VGG +30.9%) |')
  print('|---|---|---|---|---|---|---|---|---|')
  local server = T.plan.topology('server8_pcie')
  for _, name in ipairs{'resnet50', 'vgg16'} do
    local n = net(name)
    -- PyTorch's single-process nn.DataParallel: gradients summed on GPU 0 after the backward,
    -- weights sent back out (a parameter server on one GPU).
    local data_parallel = T.plan.simulate{costs = n.costs, batch = 256, topology = server, algorithm = 'server',
                                          overlap = false, plan = {groups = 8, devices = devices(8)}}
    for _, variant in ipairs{{'ring', true}, {'ring', false}, {'tree', true}, {'tree', false}} do
      local r = T.plan.search{costs = n.costs, batch = 256, topology = server, algorithm = variant[1],
                              overlap = variant[2]}
      local dp = best(r.plans, function(p) return p.groups == 8 and p.stages == 1 end)
      local hybrid = best(r.plans, function(p) return p.groups > 1 and p.stages > 1 end)
      local gpipe = best(r.plans, function(p) return p.groups == 1 and p.stages == 8 and p.schedule == 'gpipe' end)
      local function rate(p) return p and ('%.0f'):format(p.images_per_s) or '-' end
      local function vs(a, b) return (a and b) and err(a.images_per_s, b.images_per_s) or '-' end
      print(('| %s | %s | %s | %s | %s (%s) | %s | %s | %s | %s |'):format(
        name, variant[1], variant[2] and 'during backward' or 'after backward', rate(dp), rate(hybrid),
        hybrid and hybrid.label or '-', rate(gpipe), vs(hybrid, dp), vs(hybrid, data_parallel), vs(hybrid, gpipe)))
    end
  end
  print()
end

if opt.only == '' or opt.only == 'scaling' then scaling() end
if opt.only == '' or opt.only == 'nccl' then nccl() end
if opt.only == '' or opt.only == 'seeds' then seeds() end
