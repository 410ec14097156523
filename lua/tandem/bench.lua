-- `tandem bench NET [--batch=N] [--device=cpu|cuda] [--threads=T] [--layout=auto]
--  [--iters=10] [--warmup=3] [--benchmark] [--tf32] [--json]`: per-layer forward and backward
-- time of a net, and the images/s and GFLOP/s of a whole training step (forward, loss,
-- backward, SGD update), like `caffe time`.
-- NET is a net file (recipes/nets/*.lua) returning a function that builds the net and the
-- shape of one sample. --layout: channels_last or contiguous; auto, the default, takes the
-- device kind's fastest (T.parallel.preferred_layout). --benchmark (GPU): cuDNN times its
-- convolution algorithms and the fastest that fits is used, instead of its heuristics' first.
-- --tf32 (GPU): TF32 tensor cores for convolutions and Linear (T.devices' tf32 option).
local T = require 'tandem'

local PEAK_PER_CORE = 239  -- GFLOP/s, AVX-512 FMA on this kind of machine (../shared/peers)

local function run(args)
  local file = args[1]
  if not file then error('usage: tandem bench NET.lua [--batch=N] [--threads=T] [--json]', 0) end
  local named = {}
  for k, v in pairs(args) do
    if type(k) == 'string' then named[k] = v end
  end
  local opt = T.options(named, {batch = 64, device = 'cpu', threads = 0, layout = 'auto',
                               iters = 10, warmup = 3, benchmark = false, tf32 = false, json = false,
                               seed = 1})
  local build = dofile(file)
  if type(build) ~= 'function' then
    error(file .. ' must return a function building the net (see recipes/nets/)', 0)
  end
  local net, sample = build{}
  T.parallel.check_device(opt)
  local device = opt.device == 'cuda' and T.devices('cuda', 1, {benchmark = opt.benchmark, tf32 = opt.tf32})[1]
                 or T.devices('cpu', 1, {threads = opt.threads})[1]
  opt.layout = T.parallel.data_layout(opt)
  local p = T.profile(net, sample, device, {batch = opt.batch, iterations = opt.iters,
                                            warmup = opt.warmup, layout = opt.layout,
                                            seed = opt.seed})
  local images_per_s = p.batch / (p.step_ms / 1000)
  local gflops = p.train_flops / (p.step_ms / 1000) / 1e9
  if opt.json then
    print(('{"net": %q, "batch": %d, "device": %q, "threads": %d, "layout": %q, "step_ms": %.3f, ' ..
           '"images_per_s": %.1f, "gflops": %.2f, "peak_bytes": %d}')
          :format(file:match('([^/]+)%.lua$') or file, p.batch, device:name(), p.threads, opt.layout,
                  p.step_ms, images_per_s, gflops, p.peak_bytes))
    return
  end
  if opt.device == 'cuda' then
    print(('%s: batch %d on %s, %s'):format(file, p.batch, device:name(), opt.layout))
  else
    print(('%s: batch %d, %d threads, %s'):format(file, p.batch, p.threads, opt.layout))
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
    print(('%.1f images/s, %.1f GFLOP/s (%.0f%% of the %d-core FMA peak), peak memory %.1f MiB')
          :format(images_per_s, gflops, 100 * gflops / (PEAK_PER_CORE * p.threads), p.threads,
                  p.peak_bytes / 2^20))
  end
end

return run
