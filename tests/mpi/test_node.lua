-- The ranks of one node: run by ctest as
--   mpirun --oversubscribe -np 2 tandem test tests/mpi/test_node.lua
-- Both ranks run on this machine, so they are one node's two local ranks; T.devices('cuda')
-- is a node-wide call that shares the GPUs out (or fails on every rank alike, never hangs).
local t = require 'tandem.test'
local T = require 'tandem'
local S = dofile('tests/mpi/support.lua')

local rank = S.rank_of_two()

t.test('both ranks are local ranks of this node, numbered 0 and 1', function()
  t.eq(T.mpi.local_size(), 2)
  t.ok(T.mpi.local_rank() == 0 or T.mpi.local_rank() == 1, 'local rank ' .. T.mpi.local_rank())
  t.eq(T.mpi.all_reduce({T.mpi.local_rank()}, 'sum')[1], 1, 'the local ranks differ')
end)

-- popcount of a sum of disjoint one-bit-per-GPU masks equals the GPUs taken in all.
local function bits(n)
  local count = 0
  while n > 0 do
    count = count + n % 2
    n = math.floor(n / 2)
  end
  return count
end

t.test("T.devices('cuda', 'all') gives the ranks disjoint GPUs, or fails alike on both", function()
  local ok, devices = pcall(T.devices, 'cuda', 'all')
  local oks = T.mpi.all_reduce({ok and 1 or 0}, 'sum')[1]
  if not ok then
    t.ok(tostring(devices):find('no CUDA device', 1, true), tostring(devices))
    t.eq(oks, 0, 'one rank got GPUs, the other an error')
    return
  end
  local mask = 0
  for _, d in ipairs(devices) do mask = mask + 2 ^ d:index() end
  local taken = T.mpi.all_reduce({#devices, mask}, 'sum')
  t.eq(oks, 2)
  t.ok(#devices >= 1)
  t.eq(bits(taken[2]), taken[1], 'no GPU is taken by both ranks')
end)
