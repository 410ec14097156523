-- The engine across MPI processes on GPUs: each rank's groups on its share of the node's GPUs,
-- every stage's gradients summed by one NCCL communicator over all processes (rank 0's unique
-- id broadcast over MPI), or in deterministic mode through the host. Run by ctest as
--   mpirun --oversubscribe -np 2 tandem test tests/mpi/test_cuda_engine.lua
-- Without a GPU for each rank every rank prints "skipped: why" and runs nothing (ctest then
-- reports the file as skipped). The reference is one process of CPU devices: float sums in
-- another order, so the weights agree to 1e-3 relative, as in tests/core/cuda.
local t = require 'tandem.test'
local T = require 'tandem'
local S = dofile('tests/mpi/support.lua')
local net, batch, part, weights = S.net, S.batch, S.part, S.weights

local rank = S.rank_of_two()

local ok, gpus = pcall(T.devices, 'cuda', 'all')
if T.mpi.all_reduce({ok and 1 or 0}, 'min')[1] == 0 then
  print('skipped: every rank needs a GPU of its own (' .. (ok and 'the other rank has none' or tostring(gpus)) .. ')')
  return
end
local per_rank = T.mpi.all_reduce({#gpus}, 'min')[1]

local function engine(parallel, devices)
  local model = net()
  local e = T.Engine{net = model, devices = devices, optim = T.optim.SGD{lr = 0.05, momentum = 0.9},
                     seed = 4, parallel = parallel, layout = 'contiguous'}
  return e, model
end

local function relative_difference(a, b)
  local d = 0
  for i = 1, math.max(#a, #b) do
    d = math.max(d, math.abs((a[i] or 0 / 0) - (b[i] or 0 / 0)) / math.max(1, math.abs(b[i] or 1)))
  end
  return d
end

local function train(groups, steps)
  local mine = {}
  for g = 1, groups do mine[g] = gpus[g] end
  local e, model = engine({groups = groups, bucket_bytes = 256}, mine)
  for step = 1, steps do e:step(part(batch(16, step))) end
  local _, one = engine({groups = 2 * groups, mpi = false}, T.devices('cpu', 2 * groups, {threads = 1}))
  for step = 1, steps do one:step(batch(16, step)) end
  return weights(model), weights(one)
end

t.test('2 ranks x 1 group on GPUs train like 1 process x 2 groups (5 steps)', function()
  local got, want = train(1, 5)
  local d = relative_difference(got, want)
  t.ok(d < 1e-3, ('largest relative difference %g'):format(d))
  local low, high = T.mpi.all_reduce(got, 'min'), T.mpi.all_reduce(got, 'max')
  t.eq(relative_difference(low, high), 0, 'every rank holds the same weights')
end)

t.test('2 ranks x 2 groups on GPUs train like 1 process x 4 groups', function()
  if per_rank < 2 then
    print('# skipped: needs 2 GPUs per rank, found ' .. per_rank)
    return
  end
  local got, want = train(2, 5)
  local d = relative_difference(got, want)
  t.ok(d < 1e-3, ('largest relative difference %g'):format(d))
end)

t.test("batch_norm = 'sync' on GPUs: statistics over both ranks, like one process", function()
  local mine, model = engine({groups = 1, batch_norm = 'sync'}, {gpus[1]})
  for step = 1, 3 do mine:step(part(batch(16, step))) end
  local one, reference = engine({groups = 2, batch_norm = 'sync', mpi = false}, T.devices('cpu', 2, {threads = 1}))
  for step = 1, 3 do one:step(batch(16, step)) end
  local d = relative_difference(weights(model), weights(reference))
  t.ok(d < 1e-3, ('largest relative difference %g'):format(d))
end)

t.test('deterministic mode on GPUs across processes: the bits of one GPU running both halves', function()
  -- The replicas' sum goes through the host, in the canonical order (no NCCL): rank 0's half
  -- plus rank 1's, as one device sums its two micro-batches. Each rank checks on its own GPU.
  local mine, model = engine({groups = 1, deterministic = true}, {gpus[1]})
  for step = 1, 3 do mine:step(part(batch(16, step))) end
  local one, reference = engine({groups = 1, micro_batches = 2, deterministic = true, mpi = false}, {gpus[1]})
  for step = 1, 3 do one:step(batch(16, step)) end
  t.eq(relative_difference(weights(model), weights(reference)), 0, 'bit for bit')
end)

t.test('a stage on a GPU in one rank and on a CPU device in the other is refused on every rank', function()
  local mixed = rank == 0 and {gpus[1]} or T.devices('cpu', 1)
  t.raises(function() engine({groups = 1}, mixed) end, 'every rank must put a stage on the same kind of device')
end)
