-- Statistics of timings, one definition for every script that summarises them, and the
-- machine's load they are read against.
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

return M
