-- Printing nets: tostring(layer) / print(net), and net:summary(sample_shape).
--
-- The rows come from C++ (layer:summary_rows, lua/bind_layer.cpp); this file only lays them
-- out. A plain layer prints on one line; a Sequential or a block prints a table of its layers
-- (name, kind, options, parameters), and net:summary adds each layer's output shape and the
-- total parameter count.
local M = {}

-- 1234567 -> "1,234,567"
local function thousands(n)
  local text = tostring(math.floor(n))
  local sign, digits = text:match('^(-?)(%d+)$')
  if not digits then return text end
  digits = digits:reverse():gsub('(%d%d%d)', '%1,'):reverse():gsub('^,', '')
  return sign .. digits
end
M.thousands = thousands

-- 1536 -> "1.5 KiB"
function M.bytes(n)
  local units, i = {'B', 'KiB', 'MiB', 'GiB', 'TiB'}, 1
  while n >= 1024 and i < #units do n, i = n / 1024, i + 1 end
  return i == 1 and ('%d B'):format(n) or ('%.1f %s'):format(n, units[i])
end

-- {1, 32, 28, 28} from index 2 -> "32x28x28"
local function shape_text(shape, first)
  local parts = {}
  for i = first or 1, #shape do parts[#parts + 1] = tostring(shape[i]) end
  return #parts == 0 and 'scalar' or table.concat(parts, 'x')
end

-- Lays out `rows` (lists of strings) under `headers`; columns listed in `right` align right.
local function layout(headers, rows, right)
  local widths = {}
  for i, h in ipairs(headers) do widths[i] = #h end
  for _, row in ipairs(rows) do
    for i, cell in ipairs(row) do widths[i] = math.max(widths[i], #cell) end
  end
  local function line(cells)
    local out = {}
    for i, cell in ipairs(cells) do
      local pad = (' '):rep(widths[i] - #cell)
      out[i] = right[i] and pad .. cell or cell .. pad
    end
    return (('  ' .. table.concat(out, '  ')):gsub('%s+$', ''))
  end
  local lines = {line(headers)}
  for _, row in ipairs(rows) do lines[#lines + 1] = line(row) end
  return table.concat(lines, '\n')
end

-- Names as displayed: indented by depth, relative to the enclosing row ("body.conv1" under
-- "block4"), so the two branches of a block stay apart.
local function display_names(rows)
  local names, parents = {}, {}
  for i, row in ipairs(rows) do
    local parent = parents[row.depth - 1]
    local name = row.name
    if parent and name:sub(1, #parent + 1) == parent .. '.' then name = name:sub(#parent + 2) end
    names[i] = (' '):rep(2 * row.depth) .. name
    parents[row.depth] = row.name
  end
  return names
end

-- Whether any row is a graph's node (and so has the names of its inputs to show).
local function has_inputs(rows)
  for _, row in ipairs(rows) do
    if row.inputs then return true end
  end
  return false
end

local function title(layer)
  local name = layer:name()
  return layer:kind() .. (name ~= '' and (" '" .. name .. "'") or '')
end

-- tostring(layer): one line for a plain layer, a table for a container or block.
local function layer_text(layer)
  local total = thousands(layer:parameter_count())
  if #layer:children() == 0 then
    local options = layer:options_text()
    return ('%s%s, %s parameters'):format(title(layer),
                                           options ~= '' and (' (' .. options .. ')') or '', total)
  end
  local cells, rows = {}, layer:summary_rows()
  local names, fed = display_names(rows), has_inputs(rows)
  for i, row in ipairs(rows) do
    cells[i] = {names[i], row.kind, row.options, thousands(row.parameters)}
    if fed then table.insert(cells[i], 2, row.inputs or '') end
  end
  local top = #layer:children()
  local entries = top == 1 and 'entry' or 'entries'
  if layer:kind() == 'Graph' then entries = top == 1 and 'node' or 'nodes' end
  local headers = fed and {'name', 'inputs', 'kind', 'options', 'parameters'} or {'name', 'kind', 'options', 'parameters'}
  return ('%s: %d %s, %s parameters\n'):format(title(layer), top, entries, total) ..
         layout(headers, cells, {[#headers] = true})
end

function M.layer_tostring(layer)
  local ok, text = pcall(layer_text, layer)
  return ok and text or ('Layer(%s)'):format(tostring(text):gsub('^.-: ', ''))
end

local Summary = {}
Summary.__index = Summary

function Summary.__tostring(s)
  local cells, names, fed = {}, display_names(s.rows), has_inputs(s.rows)
  for i, row in ipairs(s.rows) do
    cells[i] = {names[i], row.kind, row.options, shape_text(row.output_shape, 2),
                thousands(row.parameters)}
    if fed then table.insert(cells[i], 2, row.inputs or '') end
  end
  local headers = fed and {'name', 'inputs', 'kind', 'options', 'output', 'parameters'}
    or {'name', 'kind', 'options', 'output', 'parameters'}
  return ('%s, input %s\n'):format(s.title, shape_text(s.input_shape)) ..
         layout(headers, cells, {[#headers] = true}) ..
         ('\n  total: %s parameters (%s as f32), output %s'):format(
           thousands(s.parameters), M.bytes(4 * s.parameters), shape_text(s.output_shape))
end

-- net:summary(sample_shape): each layer's output shape for one sample of `sample_shape`
-- (no batch dimension: {1, 28, 28}), with the parameter counts. Returns a table
-- {rows, parameters, input_shape, output_shape, title} that prints as a table.
function M.summary(layer, sample_shape)
  if type(sample_shape) ~= 'table' then
    error(("bad argument #1 to 'summary' (sample shape expected, e.g. {1, 28, 28}, got %s)")
          :format(type(sample_shape)), 2)
  end
  local shape = {1}
  for i, d in ipairs(sample_shape) do shape[i + 1] = d end
  local ok, rows = pcall(layer.summary_rows, layer, shape)
  if not ok then error(rows, 2) end
  local output = layer:output_shape(shape)
  table.remove(output, 1)
  return setmetatable({
    rows = rows,
    parameters = layer:parameter_count(),
    input_shape = sample_shape,
    output_shape = output,
    title = title(layer),
  }, Summary)
end

-- Adds the Lua methods to the layer metatable (called once by init.lua).
function M.install(mt)
  mt.__tostring = M.layer_tostring
  mt.__index.summary = M.summary
end

return M
