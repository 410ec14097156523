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
