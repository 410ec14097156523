-- `tandem bench NET [--batch=N] [--threads=T] [--layout=channels_last] [--iters=10]
--  [--warmup=3] [--json]`: per-layer forward and backward time of a net, and the images/s and
-- GFLOP/s of a whole training step (forward, loss, backward, SGD update), like `caffe time`.
-- NET is a net file (recipes/nets/*.lua) returning a function that builds the net and the
-- shape of one sample.
local T = require 'tandem'

local PEAK_PER_CORE = 239  -- GFLOP/s, AVX-512 FMA on this kind of machine (../shared/peers)

local function run(args)
  local file = args[1]
  if not file then error('usage: tandem bench NET.lua [--batch=N] [--threads=T] [--json]', 0) end
  local named = {}
  for k, v in pairs(args) do
    if type(k) == 'string' then named[k] = v end
  end
  local opt = T.options(named, {batch = 64, threads = 0, layout = 'channels_last', iters = 10,
                               warmup = 3, json = false, seed = 1})
  local build = dofile(file)
  if type(build) ~= 'function' then
    error(file .. ' must return a function building the net (see recipes/nets/)', 0)
  end
  local net, sample = build{}
  local device = T.devices('cpu', 1, {threads = opt.threads})[1]
  local p = T.profile(net, sample, device, {batch = opt.batch, iterations = opt.iters,
                                            warmup = opt.warmup, layout = opt.layout,
                                            seed = opt.seed})
  local images_per_s = p.batch / (p.step_ms / 1000)
  local gflops = p.train_flops / (p.step_ms / 1000) / 1e9
  if opt.json then
    print(('{"net": %q, "batch": %d, "threads": %d, "layout": %q, "step_ms": %.3f, ' ..
           '"images_per_s": %.1f, "gflops": %.2f, "peak_bytes": %d}')
          :format(file:match('([^/]+)%.lua$') or file, p.batch, p.threads, opt.layout,
                  p.step_ms, images_per_s, gflops, p.peak_bytes))
    return
  end
  print(('%s: batch %d, %d threads, %s'):format(file, p.batch, p.threads, opt.layout))
  print(('%-10s %-12s %-38s %-16s %10s %9s %9s %7s'):format(
    'layer', 'kind', 'options', 'output', 'params', 'fwd ms', 'bwd ms', '% step'))
  for _, l in ipairs(p.layers) do
    print(('%-10s %-12s %-38s %-16s %10d %9.3f %9.3f %6.1f%%'):format(
      l.name, l.kind, l.options:sub(1, 38), table.concat(l.output, 'x'), l.parameters,
      l.forward_ms, l.backward_ms, 100 * (l.forward_ms + l.backward_ms) / p.step_ms))
  end
  print(('SGD update %.3f ms; whole step %.3f ms (median of %d)'):format(p.update_ms, p.step_ms, opt.iters))
  print(('%.1f images/s, %.1f GFLOP/s (%.0f%% of the %d-core FMA peak), peak memory %.1f MiB')
        :format(images_per_s, gflops, 100 * gflops / (PEAK_PER_CORE * p.threads), p.threads,
                p.peak_bytes / 2^20))
end

return run
