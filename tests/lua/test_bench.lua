-- `tandem bench` on the reference nets: each builds with the parameter count PyTorch gives the
-- same net in ../shared/peers/nets.py, runs a step and reports its timings.
local t = require 'tandem.test'
local T = require 'tandem'
local S = dofile('tests/lua/support.lua')


t.test('the reference nets build with the documented shapes and sizes', function()
  local expect = {
    lenet5 = {input = {1, 28, 28}, parameters = 431080},
    smallbn = {input = {1, 28, 28}, parameters = 870826},
    resnet20 = {input = {3, 32, 32}, parameters = 272474},
    alexnet64 = {input = {3, 64, 64}, parameters = 5871434},
  }
  for name, want in pairs(expect) do
    local net, input = dofile('recipes/nets/' .. name .. '.lua')()
    t.eq(input, want.input, name)
    local batch = {2, input[1], input[2], input[3]}
    t.eq(net:output_shape(batch), {2, 10}, name)
    t.eq(net:parameter_count(), want.parameters, name)
  end
end)

t.test('tandem bench prints per-layer times and a JSON line', function()
  local out, rc = S.tandem({'bench', 'recipes/nets/lenet5.lua', '--batch=4', '--iters=1',
                            '--warmup=0', '--threads=1'})
  t.eq(rc, 0, out)
  t.ok(out:find('conv1', 1, true) and out:find('images/s', 1, true), out)
  t.ok(out:find('machine: ' .. T.machine_line(), 1, true) and out:find('of the measured 1-thread float32 FMA peak', 1, true), out)
  out, rc = S.tandem({'bench', 'recipes/nets/resnet20.lua', '--batch=2', '--iters=1',
                      '--warmup=0', '--threads=1', '--json'})
  t.eq(rc, 0, out)
  local ips = tonumber(out:match('"images_per_s": ([%d.]+)'))
  t.ok(ips and ips > 0, out)
  -- Quoted against this machine's measured peak (T.cpu_peak), which the table's first line names.
  local peak = T.cpu_peak()
  local one_thread = T.cores() > 1 and peak.gflops_one_core or peak.gflops_all_cores
  t.eq(tonumber(out:match('"peak_gflops": ([%d.]+)')), tonumber(('%.1f'):format(one_thread)), out)
  t.ok(out:find('"isa": "' .. peak.isa .. '"', 1, true), out)
  out, rc = S.tandem({'bench', 'recipes/nets/lenet5.lua', '--batches=4'})
  t.eq(rc, 2)
  t.ok(out:find("tandem bench: unknown option '--batches'; did you mean --batch?", 1, true), out)
  t.ok(not out:find('traceback', 1, true), 'a command-line mistake has no traceback: ' .. out)
  out, rc = S.tandem({'bench', 'recipes/nets/lenet5.lua', '--device=tpu'})
  t.ok(rc == 2 and out:find("tandem bench: option --device must be 'cpu' or 'cuda', got 'tpu'", 1, true), out)
  out, rc = S.tandem({'bench', 'recipes/nets/lenet5.lua', '--tf32'})
  t.ok(rc == 2 and out:find('--tf32 is for --device=cuda', 1, true), out)
  out, rc = S.tandem({'bench', 'recipes/nets/lenet5.lua', '--workspace=1GiB'})
  t.ok(rc == 2 and out:find("--workspace is cuDNN's budget, for --device=cuda", 1, true), out)
end)

t.test('tandem bench --device=cuda (with TF32 and a workspace budget) times a GPU step, or says there is no GPU', function()
  local out, rc = S.tandem({'bench', 'recipes/nets/smallbn.lua', '--batch=8', '--iters=2',
                            '--warmup=1', '--device=cuda', '--benchmark', '--tf32', '--workspace=256MiB',
                            '--json'})
  if pcall(T.devices, 'cuda', 1) then
    t.eq(rc, 0, out)
    t.ok(out:find('"device": "cuda:0"', 1, true) and tonumber(out:match('"images_per_s": ([%d.]+)')), out)
  else
    t.ok(rc == 1 and out:find('no CUDA device', 1, true), out)
  end
end)
