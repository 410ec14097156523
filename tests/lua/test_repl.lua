-- The interactive session, driven through a pipe: `tandem` with its input from a file.
local T = require 'tandem'
local t = require 'tandem.test'
local S = dofile('tests/lua/support.lua')
local host = require 'tandem.host'

local function session(input)
  local out, rc = S.tandem({}, input)
  return out, rc
end

t.test('banner names the version and the backends', function()
  local out, rc = session('')
  t.eq(rc, 0)
  t.ok(out:find('Tandem ' .. host.version, 1, true), out)
  -- The backends line of `tandem devices` (test_devices.lua checks its variants).
  t.ok(out:find('backends: cpu (oneDNN); cuda: ', 1, true), out)
  local has_cuda = false
  for _, b in ipairs(T.backends) do has_cuda = has_cuda or b == 'cuda' end
  t.ok(out:find(has_cuda and 'cuda: compiled' or 'cuda: not compiled in (TANDEM_CUDA=OFF)', 1,
                true), out)
  -- A machine without NVIDIA's driver says so, not "driver version is insufficient".
  t.ok(not out:find('InsufficientDriver', 1, true), out)
end)

t.test('expressions print their values; T is loaded', function()
  local out = session('1 + 2\nT.zeros{2, 3}\n{1, 28, 28}\n"text", nil, true\nT.version\n')
  local lines = S.lines(out)
  t.ok(out:find('> 3\n', 1, true), out)
  t.ok(out:find('Tensor(2x3, f32, host)', 1, true), out)
  t.ok(out:find('{1, 28, 28}', 1, true), out)
  t.ok(out:find('text\tnil\ttrue', 1, true), out)
  t.ok(out:find('> ' .. host.version .. '\n', 1, true), out)
  t.ok(#lines >= 5)
end)

t.test('a tensor prints its values, long dimensions cut to their ends', function()
  local out = session('T.tensor{{1, 2, 3}, {4, 5, 6}}\nT.tensor({7, 8}, nil, {dtype = "i32"})\nT.zeros{9}\n')
  t.ok(out:find('Tensor(2x3, f32, host)\n[[1.0000, 2.0000, 3.0000],\n [4.0000, 5.0000, 6.0000]]', 1, true), out)
  t.ok(out:find('Tensor(2, i32, host)\n[7, 8]', 1, true), out)
  t.ok(out:find('[0.0000, 0.0000, 0.0000, ..., 0.0000, 0.0000, 0.0000]', 1, true), out)
end)

t.test('Tab completes names, fields and methods', function()
  local completions = require('tandem.pretty').completions
  local globals = {T = T, x = T.zeros{2}}  -- the session's globals
  local function complete(text) return completions(text, globals) end
  t.eq(complete('T.nn.Conv'), {'T.nn.Conv2d'})
  t.eq(complete('T.opt'), {'T.optim', 'T.options'})
  t.eq(complete('x:to_'), {'x:to_flat', 'x:to_table'})
  t.eq(complete('nothing.here'), {})
  t.ok(#complete('T.') > 20, 'every name of T')
end)

t.test('statements run; globals persist', function()
  local out = session('x = 6\nprint(x * 7)\nfunction f(a) return a + 1 end\nf(x)\n')
  t.ok(out:find('42\n', 1, true), out)
  t.ok(out:find('> 7\n', 1, true), out)
end)

t.test('incomplete chunks continue on the next line', function()
  local out = session('for i = 1, 3 do\n  print(i * 10)\nend\nlocal t = {\n  a = 1,\n}\n')
  t.ok(out:find('10\n20\n30\n', 1, true), out)
  t.ok(out:find('>> ', 1, true), out)
  t.ok(not out:find('error', 1, true), out)
end)

t.test('errors are printed and the session goes on', function()
  local out, rc = session('error("boom")\nT.zeros("x")\n5 * 5\n' ..
                          'T.nn.Conv2d(1, 2, 3, {padd = 1})\n' ..
                          'x = = 1\n6 * 7\n')
  t.eq(rc, 0)
  t.ok(out:find('error: stdin:1: boom', 1, true), out)
  t.ok(out:find("error: stdin:1: bad argument #1 to 'zeros' (shape expected", 1, true), out)
  t.ok(out:find('> 25\n', 1, true), out)
  t.ok(out:find("nn.Conv2d: unknown option 'padd'", 1, true), out)
  t.ok(out:find("error: stdin:1: unexpected symbol near '='", 1, true), out)
  t.ok(out:find('> 42\n', 1, true), out)
end)

t.test('nets print as tables', function()
  local out = session('net = T.nn.Sequential{T.nn.Linear(4, 3), T.nn.ReLU()}\nnet\n' ..
                      'net:summary{4}\n')
  t.ok(out:find('Sequential: 2 entries, 15 parameters', 1, true), out)
  t.ok(out:find('fc1%s+Linear%s+4%->3%s+3%s+15'), out)
end)

t.test('input ending inside a chunk is reported', function()
  local out, rc = session('for i = 1, 2 do\n')
  t.eq(rc, 0)
  t.ok(out:find('error: the input ended inside an unfinished chunk', 1, true), out)
end)
