-- A recipe in which rank 1 fails while rank 0 trains on, for tests/lua/test_mpi.lua:
--   mpirun -np 2 tandem run tests/mpi/failing_rank.lua --how=raise|step|die
-- raise: a Lua error between steps; step: an error inside rank 1's step (a batch the net
-- cannot take), while rank 0 waits in the gradient all-reduce; die: rank 1 exits at once,
-- without a word to MPI. Rank 0 would go on for 10^6 steps: only the job's end stops it.
local T = require 'tandem'
local opt = ...
local nn = T.nn
local rank = T.mpi.rank()

local net = nn.Sequential{nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 2)}
local engine = T.Engine{net = net, devices = T.devices('cpu', 1, {threads = 1}),
                        optim = T.optim.SGD{lr = 0.1}}
local images, labels = T.randn({8, 1, 4, 4}), T.tensor({0, 1, 0, 1, 0, 1, 0, 1}, {8}, {dtype = 'i32'})
local wrong = T.randn({8, 1, 5, 5})
for step = 1, 1000000 do
  if rank == 1 and step == 3 then
    if opt.how == 'raise' then error('rank 1 raises on purpose at step 3') end
    if opt.how == 'die' then os.exit(3) end
    if opt.how == 'step' then engine:step(wrong, labels) end
  end
  engine:step(images, labels)
end
