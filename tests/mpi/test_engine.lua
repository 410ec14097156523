-- The engine across the processes of an MPI job: run by ctest as
--   mpirun --oversubscribe -np 2 tandem test tests/mpi/test_engine.lua
-- Each rank runs every test; the references are single-process engines (parallel.mpi = false)
-- that every rank computes for itself on the whole batch. Collectives never depend on a test's
-- outcome, so a failing check cannot leave the other rank waiting.
local t = require 'tandem.test'
local T = require 'tandem'
local S = dofile('tests/mpi/support.lua')
local net, batch, part, weights = S.net, S.batch, S.part, S.weights

local rank = S.rank_of_two()

local function engine(parallel, devices, seed, scaling)
  local model = net()
  scaling = scaling or {}
  local e = T.Engine{net = model, devices = T.devices('cpu', devices, {threads = 1}),
                     optim = T.optim.SGD{lr = 0.05, momentum = 0.9}, seed = seed or 4,
                     parallel = parallel, layout = 'contiguous', loss_scale = scaling.loss_scale,
                     initial_loss_scale = scaling.initial_loss_scale}
  return e, model
end

local function max_difference(a, b)
  local d = 0
  for i = 1, math.max(#a, #b) do d = math.max(d, math.abs((a[i] or 0 / 0) - (b[i] or 0 / 0))) end
  return d
end

-- Bits equal on every rank: each rank's values against rank 0's.
local function same_on_every_rank(values)
  local sum = T.mpi.all_reduce(values, 'max')
  local low = T.mpi.all_reduce(values, 'min')
  return max_difference(sum, low) == 0
end

local function train_mpi(parallel, devices, steps, n)
  local e, model = engine(parallel, devices)
  for step = 1, steps do e:step(part(batch(n, step))) end
  return e, model
end

local function train_one(parallel, devices, steps, n)
  local e, model = engine(parallel, devices)
  for step = 1, steps do e:step(batch(n, step)) end
  return e, model
end

t.test('2 ranks x 1 group train bit for bit like 1 process x 2 groups (5 steps)', function()
  local _, mine = train_mpi({groups = 1}, 1, 5, 16)
  local _, one = train_one({groups = 2, mpi = false}, 2, 5, 16)
  local w = weights(mine)
  t.eq(max_difference(w, weights(one)), 0, 'weights against one process')
  t.ok(same_on_every_rank(w), 'every rank holds the same weights')
end)

t.test('2 ranks x 2 groups train like 1 process x 4 groups', function()
  local _, mine = train_mpi({groups = 2}, 2, 5, 16)
  local _, one = train_one({groups = 4, mpi = false}, 4, 5, 16)
  local w = weights(mine)
  local d = max_difference(w, weights(one))
  t.ok(d < 1e-5, ('max difference %g'):format(d))
  t.ok(same_on_every_rank(w), 'every rank holds the same weights')
end)

t.test('deterministic mode: 2 ranks x 2 groups give the bits of 1 process x 4 groups', function()
  local _, mine = train_mpi({groups = 2, deterministic = true}, 2, 5, 16)
  local _, one = train_one({groups = 4, deterministic = true, mpi = false}, 4, 5, 16)
  t.eq(max_difference(weights(mine), weights(one)), 0, 'weights against one process')
end)

t.test('2 ranks x 1 group x 2 stages: both stages reduce over MPI at once', function()
  local pipe = {stages = 2, micro_batches = 2, schedule = '1f1b', split = {'pool1'}}
  local function with(extra)
    local p = {}
    for k, v in pairs(pipe) do p[k] = v end
    for k, v in pairs(extra) do p[k] = v end
    return p
  end
  local _, mine = train_mpi(with{groups = 1}, 2, 5, 16)
  local _, one = train_one(with{groups = 2, mpi = false}, 4, 5, 16)
  t.eq(max_difference(weights(mine), weights(one)), 0, 'weights against one process')
end)

t.test("batch_norm = 'sync' gathers statistics over every rank", function()
  local _, mine = train_mpi({groups = 1, batch_norm = 'sync'}, 1, 3, 16)
  local _, one = train_one({groups = 2, batch_norm = 'sync', mpi = false}, 2, 3, 16)
  local d = max_difference(weights(mine), weights(one))
  t.ok(d < 1e-5, ('max difference %g'):format(d))
  -- Per-replica statistics (micro) train otherwise: the sync run's did cross the ranks.
  local _, apart = train_one({groups = 2, mpi = false}, 2, 3, 16)
  local gap = max_difference(weights(mine), weights(apart))
  t.ok(gap > 10 * d, ('sync against per-replica statistics: %g (sync against one process: %g)'):format(gap, d))
end)

t.test('model averaging every 2 steps is the mean of replicas trained apart', function()
  -- Definition: each replica takes plain SGD steps on its own shard (its own mean gradient);
  -- every k steps the weights become the mean over all replicas.
  local k = 2
  local e, mine = engine({groups = 1, average_every = k}, 1)
  local alone, alone_net = engine({groups = 1, mpi = false}, 1)
  for step = 1, k do
    e:step(part(batch(16, step)))
    alone:step(part(batch(16, step)))
    if step < k then
      local apart = not same_on_every_rank(weights(mine))
      t.ok(apart, 'before averaging the replicas differ')
      t.eq(max_difference(weights(mine), weights(alone_net)), 0, 'before averaging: SGD on the shard')
    end
  end
  local expected, params = {}, alone_net:parameters()
  local names = {}
  for name in pairs(params) do names[#names + 1] = name end
  table.sort(names)  -- the same order of collectives on every rank
  for _, name in ipairs(names) do
    expected[name] = T.mpi.all_reduce_tensor(params[name]:clone()):to_flat()
  end
  local d = 0
  for name, p in pairs(mine:parameters()) do
    local got = p:to_flat()
    for i = 1, #got do d = math.max(d, math.abs(got[i] - expected[name][i] * 0.5)) end
  end
  t.ok(d < 1e-6, ('averaged weights against the mean of the separate replicas: %g'):format(d))
  t.ok(same_on_every_rank(weights(mine)), 'after averaging every rank holds the same weights')
end)

t.test('model averaging: 2 ranks x 2 groups against 1 process x 4 groups', function()
  local _, mine = train_mpi({groups = 2, average_every = 2}, 2, 4, 16)
  local _, one = train_one({groups = 4, average_every = 2, mpi = false}, 4, 4, 16)
  local d = max_difference(weights(mine), weights(one))
  t.ok(d < 1e-5, ('max difference %g'):format(d))
end)

t.test('each averaging algorithm: 2 ranks x 2 groups against 1 process x 4 groups', function()
  -- The global model, block momentum and centre come from the stage communicator's sums over
  -- every process's groups: they agree with one process holding all four groups.
  -- Rank r's first group is the one process's group 2r (its checkpoint's replica.<2r>).
  local path = os.tmpname()
  for _, algorithm in ipairs{'plain', 'bmuf', 'easgd', 'momentum'} do
    local _, mine = train_mpi({groups = 2, average_every = 2, averaging = algorithm}, 2, 5, 16)
    local one = train_one({groups = 4, average_every = 2, averaging = algorithm, mpi = false}, 4, 5, 16)
    one:save(path)
    local tensors = T.load(path)
    local prefix = rank == 0 and 'model.' or 'replica.2.model.'
    local d = 0
    for name, p in pairs(mine:parameters()) do
      local got, want = p:to_flat(), tensors[prefix .. name]:to_flat()
      for i = 1, #got do d = math.max(d, math.abs(got[i] - want[i])) end
    end
    t.ok(d < 1e-5, ('%s: max difference %g'):format(algorithm, d))
    if algorithm ~= 'plain' and algorithm ~= 'momentum' then
      t.ok(tensors['average.' .. (algorithm == 'bmuf' and 'global' or 'center') .. '.fc1.weight'] ~= nil,
           algorithm .. "'s state is in the checkpoint")
    end
  end
  os.remove(path)
end)

t.test('evaluation: every rank sees the sums over the whole batch', function()
  local e = train_mpi({groups = 1}, 1, 2, 16)
  local one = train_one({groups = 2, mpi = false}, 2, 2, 16)
  local images, labels = batch(30, 99)
  local s, r = e:evaluate_batch(images, labels), one:evaluate_batch(images, labels)
  t.eq(s.count, 30)
  t.eq(s.correct, r.correct)
  t.ok(math.abs(s.loss - r.loss) < 1e-9 * math.abs(r.loss), ('loss %.12g vs %.12g'):format(s.loss, r.loss))
  t.ok(same_on_every_rank({s.loss, s.correct, s.count}), 'every rank sees the same sums')
end)

t.test('rank 0 alone writes checkpoints; every rank resumes from one', function()
  -- One name for the job: rank 0's temporary name, handed over as a number.
  local id = T.mpi.all_reduce({rank == 0 and (os.time() % 100000) * 1000 + math.random(999) or 0}, 'max')[1]
  local path = ('/tmp/tandem-mpi-test-%d.safetensors'):format(id)
  local e, model = train_mpi({groups = 1}, 1, 3, 16)
  e:save(path .. '.rank' .. rank)
  e:save(path)
  T.mpi.barrier()
  local mine = io.open(path .. '.rank' .. rank)
  if mine then mine:close() end
  t.eq(mine ~= nil, rank == 0, 'a checkpoint file written by this rank')
  local fresh, fresh_model = engine({groups = 1}, 1, 77)
  local meta = fresh:load(path)
  t.eq(tonumber(meta.step), 3)
  t.eq(fresh:steps(), 3)
  t.eq(max_difference(weights(fresh_model), weights(model)), 0, 'resumed weights')
  -- Both continue in step.
  fresh:step(part(batch(16, 4)))
  e:step(part(batch(16, 4)))
  t.eq(max_difference(weights(fresh_model), weights(model)), 0, 'a step after resuming')
  T.mpi.barrier()
  if rank == 0 then os.remove(path); os.remove(path .. '.rank0') end
end)

-- Loss scaling across processes: a power-of-two scale computes the unscaled run's weights bit
-- for bit (every rank scales and unscales alike), and ranks that disagree on it are refused.
t.test('loss scaling across ranks: a fixed 1024 trains bit for bit as none', function()
  local scaled, scaled_model = engine({groups = 1}, 1, 4, {loss_scale = 'fixed', initial_loss_scale = 1024})
  local plain, plain_model = engine({groups = 1}, 1, 4)
  for step = 1, 3 do
    local r = scaled:step(part(batch(16, step)))
    t.eq(r.loss_scale, 1024)
    plain:step(part(batch(16, step)))
  end
  t.eq(max_difference(weights(scaled_model), weights(plain_model)), 0, 'scaled against unscaled')
  t.ok(same_on_every_rank(weights(scaled_model)), 'the ranks stay equal')
  t.raises(function() engine({groups = 1}, 1, 4, {loss_scale = rank == 0 and 'dynamic' or 'none'}) end,
           "ranks disagree on loss_scale (this rank's: " .. (rank == 0 and 'dynamic' or 'none') .. ')')
end)

t.test('ranks that disagree on the layout get a clear error, not a hang', function()
  t.raises(function() engine({groups = rank + 1}, rank + 1) end, 'ranks disagree on parallel.groups')
  -- Lists too (compared by a hash), said with this rank's value.
  t.raises(function() engine({recompute = {rank == 0}}, 1) end,
           'ranks disagree on parallel.recompute (this rank\'s: ' .. (rank == 0 and '{1}' or '{0}') .. ')')
end)
