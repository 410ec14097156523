-- Statistics of timings, one definition for every script that summarises them, and what the
-- machine did to them: its load, and the core time our training threads waited for.
local core = require 'tandem.core'

local M = {}

-- The q-quantile of a list of numbers (0.25: the lower quartile, 0.5: the median),
-- interpolated between neighbours, as the planner's profiler takes it (core/plan/profiler.cpp).
function M.quantile(values, q)
  assert(#values > 0, 'T.quantile: an empty list')
  local v = {}
  for i, x in ipairs(values) do v[i] = x end
  table.sort(v)
  local at = 1 + q * (#v - 1)
  local below = math.floor(at)
  local above = math.min(below + 1, #v)
  return v[below] + (v[above] - v[below]) * (at - below)
end

-- The machine's load: the run-queue length over the last minute (/proc/loadavg), nil where
-- there is none. Other work on the machine moves every timing; reports print it beside them.
function M.machine_load()
  local f = io.open('/proc/loadavg', 'r')
  if not f then return nil end
  local load = tonumber((f:read('*l') or ''):match('^(%S+)'))
  f:close()
  return load
end

-- The training threads' core time so far (core/base/thread_times.h): a mark to measure from, nil
-- where the kernel does not count it.
function M.thread_mark()
  local ran, waited = core.training_thread_times()
  return ran and {ran = ran, waited = waited} or nil
end

-- Seconds the training threads ran and waited for a core since `mark` (0, 0 without one).
function M.thread_times_since(mark)
  if not mark then return 0, 0 end
  local ran, waited = core.training_thread_times()
  return ran - mark.ran, waited - mark.waited
end

-- The share of their ready time the training threads waited for a core: what other processes
-- (or our own helper threads) took from them; nil when they did not run.
function M.cpu_lost(ran, waited)
  if ran + waited <= 0 then return nil end
  return waited / (ran + waited)
end

return M
