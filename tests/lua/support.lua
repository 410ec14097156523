-- Helpers shared by the Lua tests (loaded with dofile; the tests run from the source root).
local host = require 'tandem.host'

local S = {}

-- A fresh temporary file name, removed by S.cleanup().
local temporaries = {}
function S.tmpname(suffix)
  local name = os.tmpname() .. (suffix or '')
  temporaries[#temporaries + 1] = name
  return name
end

function S.write(path, text)
  local f = assert(io.open(path, 'wb'))
  f:write(text)
  f:close()
end

function S.read(path)
  local f = assert(io.open(path, 'rb'))
  local text = f:read('*a')
  f:close()
  return text
end

function S.cleanup()
  for _, name in ipairs(temporaries) do os.remove(name) end
  temporaries = {}
end

local function quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
S.quote = quote

-- Runs this `tandem` executable with `args` (a list), feeding `input` on stdin, with the
-- environment variables of `env` ({NAME = value}) set; returns the output (stdout and stderr
-- together) and the exit status.
function S.tandem(args, input, env)
  local parts = {quote(host.executable)}
  for name, value in pairs(env or {}) do table.insert(parts, 1, name .. '=' .. quote(value)) end
  for _, a in ipairs(args or {}) do parts[#parts + 1] = quote(a) end
  local stdin = S.tmpname()
  S.write(stdin, input or '')
  local cmd = table.concat(parts, ' ') .. ' < ' .. quote(stdin) .. ' 2>&1; echo "[rc=$?]"'
  local pipe = assert(io.popen(cmd, 'r'))
  local out = pipe:read('*a')
  pipe:close()
  local rc = tonumber(out:match('%[rc=(%d+)%]%s*$'))
  return out:gsub('%[rc=%d+%]%s*$', ''), rc
end

-- The positions of the lines of `text` that contain `needle`, in order.
function S.lines(text)
  local lines = {}
  for line in (text .. '\n'):gmatch('([^\n]*)\n') do lines[#lines + 1] = line end
  return lines
end

-- A step's batch of n 1x8x8 images in 3 classes, the same wherever it is made (the parallel
-- tests compare engines step by step).
function S.toy_batch(n, step)
  local T = require 'tandem'
  local values, labels = {}, {}
  for i = 1, n do
    local k = (i * 7 + step) % 3
    labels[i] = k
    for j = 1, 64 do values[#values + 1] = (k - 1) + 0.3 * math.sin(i * 13 + j * 7 + step) end
  end
  return T.tensor(values, {n, 1, 8, 8}), T.tensor(labels, {n}, {dtype = 'i32'})
end

-- Whether Debian's Fashion-MNIST is installed, for the tests that train a recipe on it (they
-- say they are skipped otherwise).
S.fashion_mnist = '/usr/share/datasets/fashion-mnist'
function S.have_fashion_mnist()
  local f = io.open(S.fashion_mnist .. '/train-images-idx3-ubyte.gz', 'rb')
  if not f then
    print('# skipped: ' .. S.fashion_mnist .. ' is missing (tools/install-deps installs dataset-fashion-mnist)')
    return false
  end
  f:close()
  return true
end

-- An Inception-style block on 1x8x8 images, graph 'mixed': three branches (b1, b2, b3) joined
-- along channels by 'join' (6 channels).
function S.inception()
  local nn = require('tandem').nn
  local g = nn.Graph{name = 'mixed'}
  local x = g:input('x')
  local b1 = g:add(nn.Conv2d(1, 2, 1, {name = 'b1'}), x)
  local b2 = g:add(nn.Sequential{nn.Conv2d(1, 2, 1), nn.ReLU(), nn.Conv2d(2, 3, 3, {pad = 1}), name = 'b2'}, x)
  local b3 = g:add(nn.MaxPool2d(3, {stride = 1, pad = 1, name = 'b3'}), x)
  g:output(g:add(nn.Concat{name = 'join'}, b1, b2, b3))
  return g
end

-- An engine's parameters by name, each as a flat Lua list.
function S.weights(engine)
  local out = {}
  for name, p in pairs(engine:net():parameters()) do out[name] = p:to_flat() end
  return out
end

return S
