-- The `tandem` module: local T = require 'tandem'.
--
-- The C half is 'tandem.core' (lua/module.cpp and lua/bind_*.cpp): tensors, devices, layers,
-- files and data sets. This file gathers it under T, adds the nn constructors (tandem.nn,
-- which check options before any C++ object is built) and the Lua methods that print nets.
-- Conventions (see docs/lua-api.md): wrong arguments raise an error; outcomes a recipe may
-- branch on (a file that is not there) return nil and a message.
local core = require 'tandem.core'

local T = {}

T.version = core.version
T.backends = core.backends

-- Tensors (lua/bind_tensor.cpp) and devices (lua/bind_device.cpp).
T.tensor = core.tensor
T.zeros = core.zeros
T.ones = core.ones
T.randn = core.randn
-- Tensor math (lua/bind_tensor_math.cpp): the operators and methods are on the tensors.
T.cat = core.cat
T.devices = core.devices

-- Layers and the loss (lua/tandem/nn.lua over lua/bind_nn.cpp and lua/bind_loss.cpp).
T.nn = require 'tandem.nn'

-- Files and data sets (lua/bind_io.cpp, lua/bind_data.cpp).
T.save = core.save
T.load = core.load
-- A copy of the binding's table: the Lua helpers below join T.data, not core.data (whose
-- functions raise plain messages; mnist_split raises a command-line mistake).
T.data = {}
for name, f in pairs(core.data) do T.data[name] = f end

-- T.data.mnist_split(folder, split [, {mean =, std =}]): the idx pair `split`-images-idx3-ubyte.gz
-- and `split`-labels-idx1-ubyte.gz ('train' or 't10k') of the folder a recipe's --data names.
-- A missing or unreadable file is the command line's mistake (exit status 2), naming --data.
function T.data.mnist_split(folder, split, options)
  local prefix = folder .. '/' .. split
  local set, why = T.data.mnist(prefix .. '-images-idx3-ubyte.gz', prefix .. '-labels-idx1-ubyte.gz', options)
  if not set then
    require('tandem.command_line').usage_error(("--data=%s: %s (--data names the folder of Fashion-MNIST's idx files; Debian's "
      .. "dataset-fashion-mnist, which tools/install-deps installs, puts them in "
      .. '/usr/share/datasets/fashion-mnist)'):format(folder, why))
  end
  return set
end

-- T.save_image_grid(path, images [, {columns = 8, range = {0, 1}}]): N x C x H x W images (C 1
-- or 3) as a PNG grid, `range` the values drawn black and white.
local check = require 'tandem.options'
function T.save_image_grid(path, images, opts)
  check.arg('T.save_image_grid', 1, 'path', path, check.string)
  opts = check.check('T.save_image_grid', opts, {columns = check.positive_int,
                                                 range = check.pair(check.number)})
  local range = opts.range or {0, 1}
  local ok, err = pcall(core.save_image_grid, path, images, opts.columns or 8, range[1], range[2])
  if not ok then error('T.save_image_grid: ' .. tostring(err), 2) end
end

-- The MPI job (lua/bind_mpi.cpp): T.mpi.rank(), T.mpi.size(), T.mpi.all_reduce{...}.
T.mpi = core.mpi

-- A recipe's options: declared with defaults and help, read from its command line, checked,
-- and listed by --help (lua/tandem/command_line.lua).
T.options = require('tandem.command_line').options

-- Where the running recipe is (set by `tandem run`; nil elsewhere).
local ok, host = pcall(require, 'tandem.host')
if ok and type(host) == 'table' then T.recipe_dir = host.recipe_dir end
-- A file of the recipes' (nets/lenet5.lua): beside the running recipe, else Tandem's own.
T.recipe_path = require('tandem.paths').recipe_path

-- True when `value` is a tensor, a layer, a device.
local mt = core.metatables
function T.is_tensor(value) return getmetatable(value) == mt.Tensor end
function T.is_layer(value) return getmetatable(value) == mt.Layer end
function T.is_device(value) return getmetatable(value) == mt.Device end

-- Training (lua/tandem/engine.lua over lua/bind_engine.cpp).
local engine = require 'tandem.engine'
T.Engine = engine.Engine
T.optim = engine.optim
T.schedule = engine.schedule
engine.install(mt)
-- A recipe's --devices/--groups/--stages/... options (lua/tandem/parallel.lua).
T.parallel = require 'tandem.parallel'
-- Planning layouts by simulation (lua/tandem/plan.lua over lua/bind_plan.cpp).
T.plan = require 'tandem.plan'
T.cores = core.cores

-- Measuring (lua/bind_profile.cpp, lua/tandem/progress.lua).
T.profile = core.profile
T.now = core.now
-- T.quantile(list, q): the q-quantile of a list of timings (lua/tandem/stats.lua).
T.quantile = require('tandem.stats').quantile

-- T.cpu_peak([{remeasure = false}]): this machine's float32 FMA rate on one core and on all
-- (GFLOP/s, its widest ISA), and its memory bandwidth (GB/s), measured once and cached per CPU.
function T.cpu_peak(opts)
  opts = check.check('T.cpu_peak', opts, {remeasure = check.boolean})
  local peak = core.cpu_peak(opts.remeasure)
  return peak
end

-- "AMD EPYC 7B13, 2 cores, AVX2+FMA: 101 GFLOP/s a core, 196 on all, memory 21 GB/s": the
-- line benchmarks print before their figures.
function T.machine_line(peak)
  peak = peak or T.cpu_peak()
  return ('%s, %d cores, %s: %.0f GFLOP/s a core, %.0f on all, memory %.0f GB/s (measured %s)')
    :format(peak.model, peak.cores, peak.isa, peak.gflops_one_core, peak.gflops_all_cores,
            peak.bandwidth_gbs, peak.measured_at)
end
-- Under MPI only rank 0 writes the log; the others' logs take the lines and drop them.
T.MetricsLog = core.mpi.rank() == 0 and core.metrics_log
  or function() return {write = function() end} end
T.Progress = require 'tandem.progress'

-- Layer printing and net:summary (lua/tandem/summary.lua).
require('tandem.summary').install(mt.Layer)
-- Graph methods: g:input, g:add, g:output, g:split, g:nodes, g:forward{...} (lua/tandem/graph.lua).
require('tandem.graph').install(mt.Layer)

return T
