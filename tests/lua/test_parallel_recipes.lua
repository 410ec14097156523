-- The parallel recipes end to end on tiny synthetic sets for a couple of steps: the hybrid
-- ResNet (groups x stages x micro-batches) and the split AlexNet-like net print their partition
-- and stages, train, evaluate and write a trace; bad layouts fail with a clear message;
-- --deterministic gives the same digits whatever the layout; with --device=cuda they run on
-- GPUs (or say there are none). And the
-- 2-devices-against-2-threads benchmark runs and reports every layout and batch-norm mode.
local t = require 'tandem.test'
local T = require 'tandem'
local S = dofile('tests/lua/support.lua')

local tiny = {'--train=48', '--test=16', '--batch=16', '--epochs=1', '--max_steps=2'}

local function run(recipe, args)
  local all = {'run', recipe}
  for _, a in ipairs(tiny) do all[#all + 1] = a end
  for _, a in ipairs(args) do all[#all + 1] = a end
  return S.tandem(all)
end

local function test_accuracy(out)
  return tonumber(out:match('epoch 1: train loss %d+%.%d+ acc [%d.]+ | test loss %d+%.%d+ acc (%d+%.%d+)'))
end

t.test('resnet_hybrid.lua trains 2 groups x 2 stages x 4 micro-batches with a trace', function()
  local trace = S.tmpname('.json')
  local out, rc = run('recipes/resnet_hybrid.lua', {'--trace=' .. trace})
  t.eq(rc, 0, out)
  t.ok(out:find('4 devices: 2 groups x 2 stages x 4 micro-batches (1f1b), batch norm micro', 1, true), out)
  t.ok(out:find('partition of 24 layers into 2 stages', 1, true), 'the automatic split:\n' .. out)
  t.ok(out:find('stage 1: conv1 .. [%w_]+ on cpu:0, cpu:2') and out:find('stage 2: [%w_]+ .. fc1 on cpu:1, cpu:3'),
       'each stage on one device per group:\n' .. out)
  local accuracy = test_accuracy(out)
  t.ok(accuracy and accuracy >= 0 and accuracy <= 1, 'test accuracy printed:\n' .. out)
  local json = S.read(trace)
  for _, category in ipairs{'forward', 'backward', 'transfer', 'allreduce', 'optimizer'} do
    t.ok(json:find('"cat": *"' .. category .. '"') ~= nil, 'the trace has ' .. category .. ' spans')
  end
end)

t.test('resnet_hybrid.lua takes a manual split, GPipe and deferred batch norm', function()
  local out, rc = run('recipes/resnet_hybrid.lua', {'--devices=2', '--groups=1', '--stages=2',
                                                    '--micro_batches=2', '--schedule=gpipe',
                                                    '--split=block4', '--batch_norm=deferred'})
  t.eq(rc, 0, out)
  t.ok(out:find('stage 1: conv1 .. block4 on cpu:0', 1, true) and
       out:find('stage 2: relu5 .. fc1 on cpu:1', 1, true), out)
  t.ok(out:find('(gpipe), batch norm deferred', 1, true), out)
  t.ok(test_accuracy(out), out)
end)

t.test('resnet_hybrid.lua rejects devices that do not match groups x stages', function()
  local out, rc = run('recipes/resnet_hybrid.lua', {'--devices=3'})
  t.ok(rc ~= 0, out)
  t.ok(out:find('--devices=3 does not match --groups=2 x --stages=2', 1, true), out)
  out, rc = run('recipes/resnet_hybrid.lua', {'--schedule=zigzag'})
  t.ok(rc ~= 0 and out:find('zigzag', 1, true), out)
end)

t.test('--deterministic: 2 groups, 2 stages or 2 micro-batches train and evaluate to the same digits', function()
  -- Deferred batch norm: running statistics from the whole batch, as one device keeps them.
  local common = {'--deterministic', '--batch_norm=deferred', '--schedule=gpipe'}
  local function losses(layout)
    local args = {}
    for _, a in ipairs(common) do args[#args + 1] = a end
    for _, a in ipairs(layout) do args[#args + 1] = a end
    local out, rc = run('recipes/resnet_hybrid.lua', args)
    t.eq(rc, 0, out)
    return out:match('epoch 1: (train loss .- | test loss %S+ acc %S+)'), out
  end
  local want, out = losses{'--devices=1', '--groups=1', '--stages=1', '--micro_batches=2'}
  t.ok(want, out)
  for _, layout in ipairs{{'--devices=2', '--groups=2', '--stages=1', '--micro_batches=1'},
                          {'--devices=2', '--groups=1', '--stages=2', '--micro_batches=2'}} do
    local got
    got, out = losses(layout)
    t.eq(got, want, out)
    t.ok(out:find('batch norm deferred, deterministic', 1, true), 'the engine was told:\n' .. out)
  end
end)

t.test('--device=cuda runs a recipe on GPUs; unknown kinds and --plan=auto on GPUs are refused', function()
  local out, rc = run('recipes/resnet_hybrid.lua', {'--device=tpu'})
  t.ok(rc == 2 and out:find("recipe option --device must be 'cpu' or 'cuda', got 'tpu'", 1, true), out)
  out, rc = run('recipes/resnet_hybrid.lua', {'--device=cuda', '--plan=auto'})
  t.ok(rc ~= 0 and out:find('--plan=auto plans CPU devices; on GPUs give --groups and --stages', 1, true), out)
  out, rc = run('recipes/resnet_hybrid.lua', {'--tf32'})
  t.ok(rc ~= 0 and out:find('--tf32 is for --device=cuda', 1, true), out)
  local gpu = pcall(T.devices, 'cuda', 1)
  out, rc = run('recipes/resnet_hybrid.lua', {'--device=cuda', '--groups=1', '--stages=1'})
  if gpu then
    t.eq(rc, 0, out)
    t.ok(test_accuracy(out), out)
  else
    t.ok(rc ~= 0 and out:find('no CUDA device', 1, true), out)
  end
end)

t.test('alexnet_split.lua splits the seed net over 2 devices', function()
  local out, rc = S.tandem({'run', 'recipes/alexnet_split.lua', '--train=16', '--test=8', '--batch=8',
                            '--epochs=1', '--max_steps=2'})
  t.eq(rc, 0, out)
  t.ok(out:find('2 devices: 1 group x 2 stages x 4 micro-batches (1f1b)', 1, true), out)
  t.ok(out:find('partition of 21 layers into 2 stages', 1, true), out)
  t.ok(out:find('stage 1: conv1 .. [%w_]+ on cpu:0') and out:find('stage 2: [%w_]+ .. fc3 on cpu:1'), out)
  t.ok(test_accuracy(out), out)
end)

t.test('bench/parallel.lua reports every layout and batch-norm mode against its baseline', function()
  local out, rc = S.tandem({'run', 'bench/parallel.lua', '--nets=lenet5', '--bn_nets=smallbn', '--batch=16',
                            '--warmup=1', '--iters=1', '--json'})
  t.eq(rc, 0, out)
  local rows = {threads = 0, batch_norm = 0}
  for part, net, layout, rate, ratio in
      out:gmatch('"part": "([%w_]+)", "net": "(%w+)", "layout": "([^"]+)", "images_per_s": ([%d.]+), "ratio": ([%d.]+)') do
    rows[part] = rows[part] + 1
    t.ok(tonumber(rate) > 0 and tonumber(ratio) > 0, layout)
    if rows[part] == 1 then t.eq(tonumber(ratio), 1, 'the first layout is the baseline: ' .. layout) end
    t.eq(net, part == 'threads' and 'lenet5' or 'smallbn', layout)
  end
  t.eq(rows.threads, 4, out)
  t.eq(rows.batch_norm, 3, out)
  t.ok(out:find('bn sync', 1, true), out)
end)

t.test('bench/plan_validation.lua says which plans are crowded and its error over the rest, run after run', function()
  local out, rc = S.tandem({'run', 'bench/plan_validation.lua', '--batch=8', '--iters=2', '--warmup=1',
                            '--profile_iters=2', '--plans=2x1x1,4x1x1', '--json', '--runs=2'})
  t.eq(rc, 0, out)
  t.ok(out:find('(median)  crowded', 1, true), out)
  local crowded = {}
  for plan, share in out:gmatch('"plan": "([%w:]+)",[^\n]-"crowded": ([%d.]+)}') do crowded[plan] = tonumber(share) end
  t.eq(crowded['2x1x1'], 0, out)
  -- Four one-thread devices ask more cores than a machine of fewer has.
  if T.cores() < 4 then t.ok(crowded['4x1x1'] > 0.25, out) end
  local within = T.cores() >= 4 and 2 or 1
  t.ok(out:find(('over 2 plans %%([%%d.]+%%%% over the %d of no more devices than the %d cores%%)'):format(
    within, T.cores())), out)
  -- Each plan's errors over the two runs, and each run's largest.
  t.ok(out:find('run 2 of 2', 1, true), out)
  for _, plan in ipairs({'2x1x1', '4x1x1'}) do
    t.ok(out:find('\n' .. plan .. ' +[-+][%d.]+%% +[-+][%d.]+%% to +[-+][%d.]+%% +%d of 2'), out)
  end
  t.ok(out:find('largest error of each run: [%d.]+, [%d.]+%%; runs with every plan within 15%%: %d of 2'), out)
end)

S.cleanup()
