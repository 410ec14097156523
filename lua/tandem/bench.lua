-- `tandem bench NET.lua [options]`: per-layer forward and backward time of a net, and the
-- images/s and GFLOP/s of a whole training step (forward, loss, backward, SGD update), like
-- `caffe time`. NET is a net file (recipes/nets/*.lua) returning a function that builds the net
-- and the shape of one sample. Its options are declared below (`tandem bench --help`); --layout
-- auto takes the device kind's fastest (T.parallel.preferred_layout), --benchmark (GPU) lets
-- cuDNN time its convolution algorithms instead of taking its heuristics' first.
local T = require 'tandem'

-- The FMA peak of `threads` kernel threads on this machine (T.cpu_peak, measured): one core's
-- rate per thread, or the all-core rate once the threads take every core.
local function peak_gflops(peak, threads)
  return threads >= peak.cores and peak.gflops_all_cores or peak.gflops_one_core * threads
end

local options = {
  batch = {64, 'images a step', kind = 'positive_int'},
  device = {'cpu', 'the device kind', choices = {'cpu', 'cuda'}},
  threads = {0, 'kernel threads of the CPU device (0: every core)', kind = 'nonneg_int'},
  layout = {'auto', "the activation layout (auto: the device kind's fastest)",
            choices = {'auto', 'contiguous', 'channels_last'}},
  iters = {10, 'timed steps', kind = 'positive_int'},
  warmup = {3, 'untimed steps first', kind = 'nonneg_int'},
  benchmark = {false, "GPU: cuDNN times its convolution algorithms and the fastest is used"},
  tf32 = {false, 'GPU: TF32 tensor cores for convolutions and Linear'},
  precision = T.parallel.engine_flag('precision'),
  workspace = {'', "GPU: cuDNN's workspace budget, such as 4GiB ('': T.devices' default)", kind = 'size'},
  json = {false, 'one JSON line instead of the table'},
  seed = {1, 'the seed of the weights and the data', kind = 'nonneg_int'},
}

local about = {
  usage = 'tandem bench NET.lua [--option=value ...]',
  description = 'Per-layer forward and backward times of a net and the images/s and GFLOP/s of a whole\n'
                .. 'training step. NET.lua returns a function building the net (recipes/nets/*.lua).',
  who = 'tandem bench', who_option = 'tandem bench: option', positional = {'NET.lua'},
}

local function run(args)
  local opt = T.options(args, options, about)
  local usage_error = require('tandem.command_line').usage_error
  local file = opt[1]
  if not file then usage_error('usage: ' .. about.usage .. ' (tandem bench --help lists the options)') end
  local chunk, err = loadfile(file)
  if not chunk then usage_error('tandem bench: ' .. err) end
  local build = chunk()
  if type(build) ~= 'function' then
    usage_error(file .. ' must return a function building the net (see recipes/nets/)')
  end
  if opt.threads > 1024 then  -- T.devices' limit, said as the option it came from
    usage_error(('tandem bench: option --threads must be 0 (every core) to 1024, got %d'):format(opt.threads))
  end
  local net, sample = build{}
  net:set_precision(opt.precision)
  T.parallel.check_device(opt)
  if opt.workspace ~= '' and opt.device ~= 'cuda' then
    usage_error("tandem bench: --workspace is cuDNN's budget, for --device=cuda")
  end
  local gpu_options = {benchmark = opt.benchmark, tf32 = opt.tf32,
                       workspace = opt.workspace ~= '' and opt.workspace or nil}
  local device = opt.device == 'cuda' and T.devices('cuda', 1, gpu_options)[1]
                 or T.devices('cpu', 1, {threads = opt.threads})[1]
  opt.layout = T.parallel.data_layout(opt)
  local p = T.profile(net, sample, device, {batch = opt.batch, iterations = opt.iters,
                                            warmup = opt.warmup, layout = opt.layout,
                                            seed = opt.seed})
  local images_per_s = p.batch / (p.step_ms / 1000)
  local gflops = p.train_flops / (p.step_ms / 1000) / 1e9
  local cpu = opt.device == 'cpu' and T.cpu_peak()
  -- A step above the cached peak proves the peak was measured while other work slowed it (the
  -- cache keeps the first measurement): measure it again now.
  -- (bf16's dot products do two multiply-adds where float32's FMA does one: a bf16 step may pass
  -- the float32 peak and proves nothing.)
  if cpu and opt.precision == 'fp32' and gflops > peak_gflops(cpu, p.threads) then
    cpu = T.cpu_peak{remeasure = true}
  end
  if opt.json then
    local machine = cpu and (', "cpu": %q, "isa": %q, "peak_gflops": %.1f')
                              :format(cpu.model, cpu.isa, peak_gflops(cpu, p.threads)) or ''
    print(('{"net": %q, "batch": %d, "device": %q, "threads": %d, "layout": %q, "precision": %q, ' ..
           '"step_ms": %.3f, "images_per_s": %.1f, "gflops": %.2f, "peak_bytes": %d%s}')
          :format(file:match('([^/]+)%.lua$') or file, p.batch, device:name(), p.threads, opt.layout,
                  opt.precision, p.step_ms, images_per_s, gflops, p.peak_bytes, machine))
    return
  end
  if cpu then print('machine: ' .. T.machine_line(cpu)) end
  if opt.device == 'cuda' then
    print(('%s: batch %d on %s, %s'):format(file, p.batch, device:name(), opt.layout))
  else
    print(('%s: batch %d, %d threads, %s, %s'):format(file, p.batch, p.threads, opt.layout, opt.precision))
  end
  print(('%-10s %-12s %-38s %-16s %10s %9s %9s %7s'):format(
    'layer', 'kind', 'options', 'output', 'params', 'fwd ms', 'bwd ms', '% step'))
  for _, l in ipairs(p.layers) do
    print(('%-10s %-12s %-38s %-16s %10d %9.3f %9.3f %6.1f%%'):format(
      l.name, l.kind, l.options:sub(1, 38), table.concat(l.output, 'x'), l.parameters,
      l.forward_ms, l.backward_ms, 100 * (l.forward_ms + l.backward_ms) / p.step_ms))
  end
  print(('SGD update %.3f ms; whole step %.3f ms (median of %d)'):format(p.update_ms, p.step_ms, opt.iters))
  if opt.device == 'cuda' then
    -- Layer times are taken between synchronisations; the whole step's time comes from steps
    -- of its own that run free, as training does (the profiler's free_steps).
    print(('%.1f images/s, %.1f GFLOP/s, peak memory %.1f MiB')
          :format(images_per_s, gflops, p.peak_bytes / 2^20))
  else
    local share = gflops / peak_gflops(cpu, p.threads)
    print(('%.1f images/s, %.1f GFLOP/s (%.0f%% of the measured %d-thread float32 FMA peak%s), peak memory %.1f MiB')
          :format(images_per_s, gflops, 100 * share, p.threads,
                  share > 1 and ': above it, as Winograd\'s convolutions do fewer multiplications than'
                                .. ' the direct form counted here, or the machine was busy while the peak was measured'
                             or '',
                  p.peak_bytes / 2^20))
  end
end

return run
