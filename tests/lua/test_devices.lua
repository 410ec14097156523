-- `tandem devices`: the compiled backends and the devices present, with or without a GPU.
local T = require 'tandem'
local t = require 'tandem.test'
local S = dofile('tests/lua/support.lua')

local has_cuda = false
for _, b in ipairs(T.backends) do has_cuda = has_cuda or b == 'cuda' end

t.test('tandem devices lists the backends and the devices', function()
  local out, rc = S.tandem({'devices'})
  t.eq(rc, 0)
  local lines = S.lines(out)
  t.ok(lines[1]:find('^backends: cpu %(oneDNN%); cuda: '), out)
  t.ok(out:find('\ncpu: the host, ', 1, true), out)
  if not has_cuda then
    t.ok(lines[1]:find('cuda: not compiled in (TANDEM_CUDA=OFF)', 1, true), out)
  else
    -- Either GPUs are listed, or the line says why none was found.
    t.ok(lines[1]:find('cuda: compiled, no GPU here (', 1, true) or
         out:find('\ncuda:0 ', 1, true), out)
    t.ok(out:find('\ncuda: CUDA runtime ', 1, true), out)
  end
end)

t.test('tandem devices takes no arguments', function()
  local out, rc = S.tandem({'devices', 'extra'})
  t.eq(rc, 2, out)
  t.ok(out:find("tandem devices: unexpected argument 'extra'", 1, true), out)
end)

