-- A small TAP-like test harness (luv's tests/run.lua + lib/tap), run by `tandem test FILE...`.
--
--   local t = require 'tandem.test'
--   t.test('reshape keeps the values', function()
--     t.eq(T.tensor{1, 2, 3, 4}:reshape{2, 2}:to_table(), {{1, 2}, {3, 4}})
--   end)
--
-- Each test runs at once, inside xpcall, and prints "ok N - name" or "not ok N - name: why"
-- (then the traceback as "#" lines), with its wall time when it took a second or more (what
-- to look at when the test suite grows slow). `tandem test` ends with finish(), which prints the plain
-- line "N passed, M failed".
local M = {}
local now = require('tandem.core').now

local passed, failed, count = 0, 0, 0

local function describe(v)
  if type(v) == 'string' then return ('%q'):format(v) end
  if type(v) ~= 'table' or getmetatable(v) ~= nil then return tostring(v) end
  local parts = {}
  for i = 1, #v do parts[i] = describe(v[i]) end
  local keys = {}
  for k in pairs(v) do
    if type(k) ~= 'number' or k < 1 or k > #v then keys[#keys + 1] = k end
  end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. ' = ' .. describe(v[k]) end
  return '{' .. table.concat(parts, ', ') .. '}'
end
M.describe = describe

-- Deep equality of plain values and tables; returns false and where they differ.
local function equal(a, b, path)
  if type(a) ~= type(b) then return false, path end
  if type(a) ~= 'table' or getmetatable(a) ~= nil then return a == b, path end
  for k, v in pairs(a) do
    local ok, where = equal(v, b[k], path .. '[' .. tostring(k) .. ']')
    if not ok then return false, where end
  end
  for k in pairs(b) do
    if a[k] == nil then return false, path .. '[' .. tostring(k) .. ']' end
  end
  return true
end

local function fail(message, level)
  error(message, (level or 2) + 1)
end

-- t.ok(cond [, msg])
function M.ok(cond, msg)
  if not cond then fail('expected a true value' .. (msg and (': ' .. msg) or '')) end
end

-- t.eq(actual, expected [, msg]): deep equality for tables.
function M.eq(actual, expected, msg)
  local ok, where = equal(actual, expected, '')
  if not ok then
    fail(('expected %s, got %s%s%s'):format(describe(expected), describe(actual),
         where ~= '' and (' (differs at ' .. where .. ')') or '', msg and (': ' .. msg) or ''))
  end
end

-- Largest |a - b| over numbers or (nested) tables of numbers, or nil and why they differ.
local function max_difference(a, b, path)
  if type(a) == 'number' and type(b) == 'number' then
    if a ~= a or b ~= b then return nil, path .. ' is NaN' end
    return math.abs(a - b), path
  end
  if type(a) ~= 'table' or type(b) ~= 'table' then
    return nil, path .. ' is ' .. type(a) .. ' against ' .. type(b)
  end
  if #a ~= #b then return nil, path .. ' has ' .. #a .. ' entries against ' .. #b end
  local worst, at = 0, path
  for i = 1, #a do
    local d, where = max_difference(a[i], b[i], path .. '[' .. i .. ']')
    if d == nil then return nil, where end
    if d > worst then worst, at = d, where end
  end
  return worst, at
end

-- t.near(a, b [, tol = 1e-5]): numbers or nested tables of numbers within tol (absolute).
function M.near(a, b, tol, msg)
  tol = tol or 1e-5
  local d, where = max_difference(a, b, '')
  if d == nil then
    fail(('values differ in structure: %s%s'):format(where, msg and (': ' .. msg) or ''))
  end
  if d > tol then
    fail(('values differ by %g (tolerance %g)%s%s'):format(d, tol,
         where ~= '' and (' at ' .. where) or '', msg and (': ' .. msg) or ''))
  end
end

-- t.raises(fn, words): fn() must raise an error whose message contains `words` (a string, or
-- a list of strings that must all appear). Returns the message.
function M.raises(fn, words)
  local ok, err = pcall(fn)
  if ok then fail('expected an error' .. (words and (' mentioning ' .. describe(words)) or '')) end
  local message = tostring(err)
  local list = type(words) == 'table' and words or {words}
  for _, w in ipairs(list) do
    if not message:find(w, 1, true) then
      fail(('error message lacks %s: %s'):format(describe(w), message))
    end
  end
  return message
end

local function report(ok, name, why, seconds)
  count = count + 1
  local took = seconds and seconds >= 1 and (' (%.1f s)'):format(seconds) or ''
  if ok then
    passed = passed + 1
    print(('ok %d - %s%s'):format(count, name, took))
  else
    failed = failed + 1
    why = tostring(why)
    local first, rest = why:match('^([^\n]*)\n?(.*)$')
    print(('not ok %d - %s%s: %s'):format(count, name, took, first))
    for line in rest:gmatch('[^\n]+') do print('#   ' .. line) end
  end
  io.stdout:flush()
end

-- t.test(name, fn): runs fn now and reports it.
function M.test(name, fn)
  local start = now()
  local ok, why = xpcall(fn, function(e) return debug.traceback(tostring(e), 2) end)
  report(ok, name, why, now() - start)
end

-- A test file that failed outside any test (syntax error, error at load time).
function M.file_failed(file, message)
  report(false, file, message)
end

-- Prints "N passed, M failed" and returns the number of failures.
function M.finish()
  print(('%d passed, %d failed'):format(passed, failed))
  io.stdout:flush()
  return failed
end

return M
