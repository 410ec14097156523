-- How the interactive session shows values: tables as {1, 28, 28} or {loss = 0.3, ...} (a
-- few levels deep, long ones cut), strings quoted, tensors with their values (long dimensions
-- cut to their first and last three), everything else through tostring (layers and summaries
-- print themselves); and what Tab completes.
local core = require 'tandem.core'

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

-- A tensor's values under its description, nested by dimension like torch's print:
--   Tensor(2x3, f32, host)
--   [[0.5000, 1.0000, 2.0000],
--    [3.0000, 4.0000, 5.0000]]
local kEdge = 3  -- values kept at each end of a long dimension

local function tensor_values(t)
  local shape = t:shape()
  if #shape == 0 or t:numel() == 0 then return nil end
  local values = t:to_table()
  local integral = t:dtype() ~= 'f32'
  local function number(v)
    if integral then return ('%d'):format(v) end
    local a = math.abs(v)
    if a ~= 0 and (a < 1e-4 or a >= 1e5) then return ('%.4e'):format(v) end
    return ('%.4f'):format(v)
  end
  local function indices(n)
    if n <= 2 * kEdge then
      local all = {}
      for i = 1, n do all[i] = i end
      return all
    end
    local cut = {}
    for i = 1, kEdge do cut[#cut + 1] = i end
    cut[#cut + 1] = false  -- the elision
    for i = n - kEdge + 1, n do cut[#cut + 1] = i end
    return cut
  end
  local function rows(v, dim, indent)
    local parts = {}
    for _, i in ipairs(indices(shape[dim])) do
      if not i then
        parts[#parts + 1] = '...'
      elseif dim == #shape then
        parts[#parts + 1] = number(v[i])
      else
        parts[#parts + 1] = rows(v[i], dim + 1, indent .. ' ')
      end
    end
    local separator = dim == #shape and ', ' or (',' .. ('\n'):rep(#shape - dim) .. indent .. ' ')
    return '[' .. table.concat(parts, separator) .. ']'
  end
  if #shape == 1 and shape[1] == 1 and type(values) ~= 'table' then values = {values} end
  return rows(values, 1, '')
end

function format(value, depth, seen)
  local kind = type(value)
  if kind == 'userdata' and depth == 0 and getmetatable(value) == core.metatables.Tensor then
    local values = tensor_values(value)
    return values and (tostring(value) .. '\n' .. values) or tostring(value)
  end
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

-- What Tab completes for `text`, the word before the cursor ("T.nn.Co", "x:sh"): the names
-- in the table (or, after ':', the methods of the value) it leads to that begin as it ends,
-- each as a whole word, sorted.
function M.completions(text, globals)
  local path, separator, partial = text:match('^(.-)([%.:]?)([%w_]*)$')
  local value = globals or _G
  if separator ~= '' then
    for name in (path .. '.'):gmatch('([^%.:]+)[%.:]') do
      if type(value) ~= 'table' and type(value) ~= 'userdata' then return {} end
      local ok, field = pcall(function() return value[name] end)
      if not ok or field == nil then return {} end
      value = field
    end
  end
  local names, seen = {}, {}
  local function add_keys(t)
    if type(t) ~= 'table' then return end
    for k, v in pairs(t) do
      if type(k) == 'string' and k:match('^[%a_][%w_]*$') and k:sub(1, #partial) == partial and not seen[k]
         and (separator ~= ':' or type(v) == 'function') then
        seen[k] = true
        names[#names + 1] = k
      end
    end
  end
  if type(value) == 'table' then add_keys(value) end
  -- Methods and fields reached through the metatable's __index table (tensors, layers, ...).
  local mt = getmetatable(value)
  if type(mt) == 'table' and type(mt.__index) == 'table' then add_keys(mt.__index) end
  table.sort(names)
  local prefix = separator ~= '' and (path .. separator) or ''
  for i, name in ipairs(names) do names[i] = prefix .. name end
  return names
end

-- Prints each value, separated by tabs, as `print` would but through M.format.
function M.print_values(...)
  local parts = {}
  for i = 1, select('#', ...) do parts[i] = M.format((select(i, ...))) end
  print(table.concat(parts, '\t'))
end

return M
