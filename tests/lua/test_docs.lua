-- Every ```lua block of docs/lua-api.md runs, each on its own with T loaded; a failure names
-- the block's line. And every function and method the binding registers is documented there.
local T = require 'tandem'
local core = require 'tandem.core'
local t = require 'tandem.test'

local path = 'docs/lua-api.md'
local file = assert(io.open(path, 'r'))
local text = file:read('*a')
file:close()

-- {line = first line of the code, code = text}
local blocks = {}
do
  local n, current = 0, nil
  for line in (text .. '\n'):gmatch('([^\n]*)\n') do
    n = n + 1
    if current then
      if line:match('^```%s*$') then
        blocks[#blocks + 1] = current
        current = nil
      else
        current.code[#current.code + 1] = line
      end
    elseif line:match('^```lua%s*$') then
      current = {line = n + 1, code = {}}
    end
  end
  assert(current == nil, path .. ': a ```lua block is not closed')
end

t.test(path .. ' has examples', function() t.ok(#blocks > 20, #blocks .. ' blocks') end)

for _, block in ipairs(blocks) do
  t.test(path .. ':' .. block.line, function()
    -- Blank lines in front keep the error positions equal to the lines of the page.
    local source = ('\n'):rep(block.line - 1) .. table.concat(block.code, '\n')
    local chunk = assert(loadstring(source, '@' .. path))
    -- print still turns every value into text (so __tostring runs), but quietly.
    local function quiet_print(...)
      for i = 1, select('#', ...) do tostring((select(i, ...))) end
    end
    setfenv(chunk, setmetatable({T = T, print = quiet_print}, {__index = _G}))
    local ok, err = xpcall(chunk, debug.traceback)
    if not ok then
      error('the example at ' .. path .. ':' .. block.line .. ' failed: ' .. err, 0)
    end
  end)
end

-- Every type and function of the binding.
t.test('every bound function and method is documented', function()
  local missing = {}
  local function need(pattern, what, alternative)
    local found = text:find(pattern, 1, true) or (alternative and text:find(alternative, 1, true))
    if not found then
      missing[#missing + 1] = what
    end
  end
  for _, type_name in ipairs{'Tensor', 'Device', 'Layer', 'Dataset', 'Loss', 'Engine',
                            'Schedule', 'MetricsLog', 'Source', 'Loader'} do
    for method in pairs(core.metatables[type_name].__index) do
      need(':' .. method .. '(', type_name .. ':' .. method)
    end
  end
  for _, name in ipairs{'tensor', 'zeros', 'ones', 'randn', 'devices', 'save', 'load', 'options',
                        'is_tensor', 'is_layer', 'is_device', 'version', 'backends',
                        'recipe_dir', 'Engine', 'profile', 'now', 'MetricsLog', 'Progress'} do
    need('T.' .. name, 'T.' .. name)
  end
  for name in pairs(core.data) do need('T.data.' .. name, 'T.data.' .. name) end
  for name in pairs(T.optim) do need('T.optim.' .. name, 'T.optim.' .. name) end
  for name in pairs(T.schedule) do need('T.schedule.' .. name, 'T.schedule.' .. name) end
  for name in pairs(T.nn) do need('nn.' .. name .. '(', 'nn.' .. name, 'nn.' .. name .. '{') end
  table.sort(missing)
  t.eq(missing, {}, 'undocumented')
end)

-- The parallel options' table is the schema's (core/parallel/parallel_schema.h), row for row:
-- an option added, renamed or changed there must be documented the same way.
local function option_values(o)
  if o.kind == 'count' then return ('a whole number, at least %d'):format(o.minimum) end
  if o.kind == 'flag' then return 'true or false' end
  if o.kind == 'bytes' then return 'bytes, at least 1' end
  if o.kind == 'cuts' then return "'auto' or a list of layers" end
  if o.kind == 'stage_flags' then return 'true or false, or one per stage' end
  if o.kind == 'real' then return 'a number' end
  if o.kind == 'placement' then return 'a list of stages, each a list of layer names' end
  local quoted = {}
  for i, c in ipairs(o.choices) do quoted[i] = "'" .. c .. "'" end
  return table.concat(quoted, ', ')
end

local function parallel_option_rows()
  local rows = {}
  for _, o in ipairs(core.parallel_options()) do
    rows[#rows + 1] = ('| `%s` | `%s` | %s | %s | %s |'):format(o.name, o.default_text, option_values(o),
                                                            o.flag ~= '' and '`--' .. o.flag .. '`' or '—', o.help)
  end
  return rows
end

t.test('the parallel options are documented as the schema defines them', function()
  local missing = {}
  for _, row in ipairs(parallel_option_rows()) do
    if not text:find(row, 1, true) then missing[#missing + 1] = row end
  end
  t.eq(#missing, 0, path .. ' lacks these rows of the parallel options table:\n' .. table.concat(missing, '\n'))
end)

-- The option tables of T.Engine, T.data.Loader (and its shard and transforms), the data sources
-- (T.data.lmdb, T.data.list, T.data.mnist, T.data.interactions, dataset:batch's augmentation),
-- T.devices, T.plan.costs/search/simulate (and its plan), costs:layers, T.profile, T.optim.*,
-- T.MetricsLog, T.tensor and nn.Lua are their schemas' (core.option_schema, every schema of
-- core.option_schemas(): core/engine/engine_schema.h, core/data/pipeline_schema.h,
-- core/data/source_schema.h, core/device/device_schema.h, core/plan/plan_schema.h,
-- core/optim/optim_schema.h, core/io/metrics_log_schema.h, core/tensor/tensor_schema.h,
-- lua/lua_layer.h), exactly:
-- a table of the page per schema, holding its options in its order with their defaults, values
-- and help, and nothing else; and every such table of the page is a schema's.
local function schema_rows(name)
  local rows = {}
  for _, o in ipairs(core.option_schema(name)) do
    local default = o.default ~= nil and '`' .. o.default_text .. '`' or o.default_text
    rows[#rows + 1] = ('| `%s` | %s | %s | %s |'):format(o.name, default, o.expected, o.help)
  end
  return rows
end

-- Every table of the page under the header `header`, as its lists of rows.
local function tables_under(header)
  local tables, current = {}, nil
  for line in (text .. '\n'):gmatch('([^\n]*)\n') do
    if current then
      if line:match('^|') then
        if not line:match('^|%-') then current[#current + 1] = line end
      else
        tables[#tables + 1], current = current, nil
      end
    elseif line == header then
      current = {}
    end
  end
  return tables
end

local option_tables = tables_under('| option | default | values | what it does |')

local function same_rows(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    if a[i] ~= b[i] then return false end
  end
  return true
end

for _, name in ipairs(core.option_schemas()) do
  local want = schema_rows(name)
  -- A set of no options (T.data.folder's) has no table: the page says it takes none.
  if #want > 0 then
    t.test(('the %s options are documented exactly as their schema declares them'):format(name), function()
      -- The page's table for this schema: one holding exactly its rows; failing that, the one
      -- naming the most of its options, to show what differs. (Two sets may share an option's
      -- name, as the loader's transforms and T.data.mnist share `mean` and `std`.)
      local best, shared = nil, 0
      for _, rows in ipairs(option_tables) do
        if same_rows(rows, want) then return end
        local n = 0
        for _, row in ipairs(rows) do
          for _, o in ipairs(core.option_schema(name)) do
            if row:find('| `' .. o.name .. '` |', 1, true) == 1 then n = n + 1 end
          end
        end
        if n > shared then best, shared = rows, n end
      end
      t.ok(best ~= nil, path .. ' has no table of the ' .. name .. ' options')
      t.eq(best, want, path .. "'s table of the " .. name .. ' options')
    end)
  end
end

t.test('every option table of the page is the table of a schema', function()
  local strays = {}
  for _, rows in ipairs(option_tables) do
    local found = false
    for _, name in ipairs(core.option_schemas()) do found = found or same_rows(rows, schema_rows(name)) end
    if not found then strays[#strays + 1] = table.concat(rows, '\n') end
  end
  t.eq(strays, {}, path .. "'s option tables that no schema (core.option_schemas()) declares")
end)
