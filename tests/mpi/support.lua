-- Helpers shared by the MPI tests (dofile'd; the tests run from the source root): a small
-- batch-norm net, a step's global batch (the same on every rank), this rank's part of it,
-- and a model's weights flattened for comparison.
local T = require 'tandem'
local nn = T.nn

local M = {}

function M.net()
  return nn.Sequential{
    nn.Conv2d(1, 4, 3, {pad = 1}), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(4 * 4 * 4, 16), nn.ReLU(), nn.Linear(16, 3),
  }
end

-- This process's rank, after checking that the job has the two ranks every MPI test is
-- written for.
function M.rank_of_two()
  local rank, size = T.mpi.rank(), T.mpi.size()
  assert(size == 2, 'run under mpirun -np 2 (this is rank ' .. rank .. ' of ' .. size .. ')')
  return rank
end

-- The global batch of a step (the same on every rank).
M.batch = dofile('tests/lua/support.lua').toy_batch

-- This rank's consecutive part of a global batch (as T.parallel.share cuts it).
function M.part(images, labels)
  local n = images:shape()[1]
  local first, count = T.parallel.share(1, n)
  local flat, labs = images:to_flat(), labels:to_flat()
  local v, l = {}, {}
  for i = first, first + count - 1 do
    l[#l + 1] = labs[i]
    for j = 1, 64 do v[#v + 1] = flat[(i - 1) * 64 + j] end
  end
  return T.tensor(v, {count, 1, 8, 8}), T.tensor(l, {count}, {dtype = 'i32'})
end

-- Every parameter, flattened, in name order.
function M.weights(model)
  local all, names = {}, {}
  local p = model:parameters()
  for name in pairs(p) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    for _, x in ipairs(p[name]:to_flat()) do all[#all + 1] = x end
  end
  return all
end

return M
