-- A failing rank ends the MPI job with its error, in bounded time: runs
-- `mpirun -np 2 tandem run tests/mpi/failing_rank.lua` (loopback, oversubscribed) and checks
-- the exit status, the error text and the time. Skipped without MPI in the build or mpirun.
local t = require 'tandem.test'
local T = require 'tandem'
local S = dofile('tests/lua/support.lua')
local host = require 'tandem.host'

local function have_mpirun()
  local pipe = io.popen('command -v mpirun 2>/dev/null')
  local path = pipe:read('*l')
  pipe:close()
  return path ~= nil and path ~= ''
end

if not T.mpi.built() or not have_mpirun() then
  t.test('MPI failure handling (skipped: built without MPI or no mpirun)', function() end)
  return
end

-- The job's output (both ranks, stdout and stderr), exit status and seconds.
local function job(how)
  local cmd = table.concat({
    'OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 60',
    'mpirun --oversubscribe -np 2 --mca btl self,vader,tcp', S.quote(host.executable),
    'run tests/mpi/failing_rank.lua --how=' .. how, '2>&1; echo "[rc=$?]"'}, ' ')
  local start = T.now()
  local pipe = assert(io.popen(cmd, 'r'))
  local out = pipe:read('*a')
  pipe:close()
  return out, tonumber(out:match('%[rc=(%d+)%]%s*$')), T.now() - start
end

local function ends_the_job(how, words)
  local out, rc, seconds = job(how)
  t.ok(rc ~= 0 and rc ~= 124, ('exit status %s (124: the 60 s timeout, a hang)\n%s'):format(rc, out))
  t.ok(seconds < 30, ('the job took %.1f s'):format(seconds))
  for _, w in ipairs(words) do t.ok(out:find(w, 1, true), ('%q in the output:\n%s'):format(w, out)) end
end

t.test('a rank that raises ends the job with its error', function()
  ends_the_job('raise', {'rank 1 raises on purpose at step 3', 'rank 1 of 2 failed'})
end)

t.test('a rank whose step fails ends the job while the other waits in the all-reduce', function()
  ends_the_job('step', {"Linear 'fc1': input has 25 features", 'rank 1 of 2 failed'})
end)

t.test('a rank that dies ends the job', function()
  ends_the_job('die', {'Exit code:    3'})
end)

-- The user trial: under mpirun the bar and the epoch line showed rank 0's share (half the
-- images/s, its own loss), and Open MPI's pseudo-terminals turned a redirected log into one line
-- of carriage returns. Now: plain lines, and the job's figures, equal to one process training
-- the same replicas.
t.test('under mpirun the progress lines are plain and the figures are the whole job\'s', function()
  local common = {'recipes/resnet_hybrid.lua', '--train=64', '--test=32', '--batch=16', '--epochs=1',
                  '--stages=1', '--micro_batches=1', '--split=', '--threads=1', '--deterministic'}
  local function quoted(args)
    local parts = {}
    for i, a in ipairs(args) do parts[i] = S.quote(a) end
    return table.concat(parts, ' ')
  end
  local cmd = table.concat({
    'OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120',
    'mpirun --oversubscribe -np 2 --mca btl self,vader,tcp', S.quote(host.executable), 'run',
    quoted(common), '--groups=1 --devices=1 2>&1; echo "[rc=$?]"'}, ' ')
  local pipe = assert(io.popen(cmd, 'r'))
  local job_out = pipe:read('*a')
  pipe:close()
  t.eq(tonumber(job_out:match('%[rc=(%d+)%]%s*$')), 0, job_out)
  t.ok(not job_out:find('\r', 1, true), 'no carriage returns in a redirected mpirun log:\n' .. job_out)
  t.ok(job_out:find('epoch 1/1 %[#+%] 4/4'), 'plain progress lines:\n' .. job_out)
  local args = {'run'}
  for _, a in ipairs(common) do args[#args + 1] = a end
  args[#args + 1], args[#args + 2] = '--groups=2', '--devices=2'
  local one, rc = S.tandem(args)
  t.eq(rc, 0, one)
  local pattern = 'epoch 1: train loss (%S+) acc (%S+) |'
  local job_loss, job_acc = job_out:match(pattern)
  local one_loss, one_acc = one:match(pattern)
  t.ok(job_loss and one_loss, 'epoch lines:\n' .. job_out .. '\n' .. one)
  t.eq({job_loss, job_acc}, {one_loss, one_acc}, 'the job\'s training figures are one process\'s with the same replicas')
end)
