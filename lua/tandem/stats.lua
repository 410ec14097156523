-- Statistics of timings, one definition for every script that summarises them.
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

return M
