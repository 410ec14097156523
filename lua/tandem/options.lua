-- Checking arguments and option tables on the Lua side, before any C++ object is built.
--
-- Every message names the function, and an unknown option lists the known ones (darknet's
-- option_unused made fatal, with Caffe's "known types" list):
--   nn.Conv2d: unknown option 'padd' (known: bias, groups, init, name, pad, stride)
-- Errors are raised at the level of the code calling the constructor, so the position in the
-- message is the recipe's line.
local M = {}

-- How a value reads in a message: numbers and strings as themselves, others by type.
local function describe(value)
  if type(value) == 'string' then return ("'%s'"):format(value) end
  if type(value) == 'number' then return tostring(value) end
  local mt = getmetatable(value)
  if type(mt) == 'table' and type(mt.__name) == 'string' then return mt.__name end
  return type(value)
end
M.describe = describe

local function is_integer(v)
  return type(v) == 'number' and v == math.floor(v) and v > -2^53 and v < 2^53
end

-- Checkers: each returns the (possibly converted) value, or nil and what was expected.
function M.positive_int(v)
  if is_integer(v) and v >= 1 then return v end
  return nil, 'a positive integer'
end

function M.nonneg_int(v)
  if is_integer(v) and v >= 0 then return v end
  return nil, 'a non-negative integer'
end

-- Finite too: inf taken as LRN's alpha or Adam's eps only shows later, as NaN (issue 19).
function M.number(v)
  if type(v) == 'number' and v == v and v > -math.huge and v < math.huge then return v end
  return nil, type(v) == 'number' and 'a finite number' or 'a number'
end

function M.finite_number(v)
  if type(v) == 'number' and v == v and v > -math.huge and v < math.huge then return v end
  return nil, 'a finite number'
end

-- Finite: inf as an eps or a total is a mistake that only shows as NaN later (issue 19).
function M.positive_number(v)
  if type(v) == 'number' and v > 0 and v < math.huge then return v end
  return nil, v == math.huge and 'a finite positive number' or 'a positive number'
end

function M.boolean(v)
  if type(v) == 'boolean' then return v end
  return nil, 'true or false'
end

function M.string(v)
  if type(v) == 'string' then return v end
  return nil, 'a string'
end

-- A layer name: no dots (they separate levels in parameter names such as block1.body.conv1).
function M.name(v)
  if type(v) == 'string' and v ~= '' and not v:find('.', 1, true) then return v end
  return nil, 'a non-empty string without dots'
end

-- A number in [low, high).
function M.fraction(low, high)
  return function(v)
    if type(v) == 'number' and v >= low and v < high then return v end
    return nil, ('a number in [%s, %s)'):format(low, high)
  end
end

-- One of the given strings.
function M.one_of(choices)
  return function(v)
    for _, c in ipairs(choices) do
      if v == c then return v end
    end
    local quoted = {}
    for i, c in ipairs(choices) do quoted[i] = ("'%s'"):format(c) end
    return nil, 'one of ' .. table.concat(quoted, ', ')
  end
end

-- A size per spatial dimension: n (both) or {h, w}. `check` is a scalar checker.
function M.pair(check)
  return function(v)
    if type(v) == 'table' and getmetatable(v) == nil then
      local h, w = check(v[1]), check(v[2])
      local n = 0
      for _ in pairs(v) do n = n + 1 end
      if h and w and n == 2 then return {h, w} end
    else
      local x = check(v)
      if x then return {x, x} end
    end
    local _, what = check(nil)
    return nil, what .. ' or a pair {h, w} of them'
  end
end

-- Raises "bad argument #i to 'fn' (name must be X, got Y)" from the constructor's caller
-- (`level` 3 by default: the caller of the function that called arg; one more per helper between).
function M.arg(fn, index, name, value, check, level)
  local converted, expected = check(value)
  if converted == nil then
    error(("bad argument #%d to '%s' (%s must be %s, got %s)")
          :format(index, fn, name, expected, describe(value)), level or 3)
  end
  return converted
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  return keys
end

-- Checks the options table `opts` (nil: none) against `spec` (key -> checker) and returns a
-- table of the converted values. `fn` names the function in messages; errors are raised at
-- `level` (3 by default, as arg's).
function M.check(fn, opts, spec, level)
  level = level or 3
  local out = {}
  if opts == nil then return out end
  if type(opts) ~= 'table' or getmetatable(opts) ~= nil then
    error(('%s: options table expected, got %s'):format(fn, describe(opts)), level)
  end
  for key, value in pairs(opts) do
    local check = spec[key]
    if check == nil then
      local known = sorted_keys(spec)
      error(("%s: unknown option '%s' (%s)")
            :format(fn, tostring(key), #known == 0 and 'it takes no options'
                                         or 'known: ' .. table.concat(known, ', ')), level)
    end
    local converted, expected = check(value)
    if converted == nil then
      error(("%s: option '%s' must be %s, got %s"):format(fn, key, expected, describe(value)), level)
    end
    out[key] = converted
  end
  return out
end

-- The row of option `name` in the core's option schema `schema` (core.option_schema: name,
-- default, choices, help, ...): what a command-line flag setting that option takes its
-- default and choices from, so they are declared once. `what` names the schema's function in
-- the error for a name it lacks.
function M.schema_option(schema, name, what)
  for _, row in ipairs(require('tandem.core').option_schema(schema)) do
    if row.name == name then return row end
  end
  error(what .. ' has no option ' .. name)
end

return M
