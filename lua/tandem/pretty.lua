-- How the interactive session shows values: tables as {1, 28, 28} or {loss = 0.3, ...} (a
-- few levels deep, long ones cut), strings quoted, everything else through tostring (tensors,
-- layers and summaries print themselves).
local M = {}

local kMaxItems = 20
local kMaxDepth = 3

local function is_identifier(s)
  return type(s) == 'string' and s:match('^[%a_][%w_]*$') ~= nil
end

local format

local function format_table(t, depth, seen)
  if seen[t] then return '{...}' end
  if depth >= kMaxDepth then return '{...}' end
  seen[t] = true
  local parts, n = {}, #t
  for i = 1, math.min(n, kMaxItems) do parts[#parts + 1] = format(t[i], depth + 1, seen) end
  local keys = {}
  for k in pairs(t) do
    if not (type(k) == 'number' and k >= 1 and k <= n and k == math.floor(k)) then
      keys[#keys + 1] = k
    end
  end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do
    if #parts >= kMaxItems then break end
    local key = is_identifier(k) and k or ('[' .. format(k, depth + 1, seen) .. ']')
    parts[#parts + 1] = key .. ' = ' .. format(t[k], depth + 1, seen)
  end
  seen[t] = nil
  local total = n + #keys
  if total > #parts then parts[#parts + 1] = ('... (%d more)'):format(total - #parts) end
  return '{' .. table.concat(parts, ', ') .. '}'
end

function format(value, depth, seen)
  local kind = type(value)
  if kind == 'string' then return depth == 0 and value or ('%q'):format(value) end
  if kind == 'table' then
    local mt = getmetatable(value)
    if mt and mt.__tostring then return tostring(value) end
    return format_table(value, depth, seen)
  end
  return tostring(value)
end

-- The text the session prints for one value.
function M.format(value) return format(value, 0, {}) end

-- Prints each value, separated by tabs, as `print` would but through M.format.
function M.print_values(...)
  local parts = {}
  for i = 1, select('#', ...) do parts[i] = M.format((select(i, ...))) end
  print(table.concat(parts, '\t'))
end

return M
