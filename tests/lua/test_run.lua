-- `tandem run` with options, `tandem test`, help and unknown commands.
local t = require 'tandem.test'
local S = dofile('tests/lua/support.lua')

local function recipe(text)
  local path = S.tmpname('.lua')
  S.write(path, text)
  return path
end

local show_options = [[
local opt = ...
local keys = {}
for k in pairs(opt) do keys[#keys + 1] = tostring(k) end
table.sort(keys)
for _, k in ipairs(keys) do
  local v = opt[tonumber(k) or k]
  print(('%s=%s (%s)'):format(k, tostring(v), type(v)))
end
print('global opt is the same table: ' .. tostring(_G.opt == opt))
]]

t.test('options reach the recipe as a table', function()
  local out, rc = S.tandem({'run', recipe(show_options), '--epochs=3', '--lr=0.05', '--name=abc',
                            '--fast', '--verbose=false', '--micro-batches=4', '--empty=',
                            'extra'})
  t.eq(rc, 0, out)
  for _, line in ipairs{'epochs=3 (number)', 'lr=0.05 (number)', 'name=abc (string)',
                        'fast=true (boolean)', 'verbose=false (boolean)',
                        'micro_batches=4 (number)', 'empty= (string)', '1=extra (string)',
                        'global opt is the same table: true'} do
    t.ok(out:find(line, 1, true), 'missing ' .. line .. ' in:\n' .. out)
  end
end)

t.test('T.options merges the command line over the defaults', function()
  local path = recipe([[
local T = require 'tandem'
local opt = T.options(..., {epochs = 10, lr = 0.1, resume = '', fast = false})
print(opt.epochs, opt.lr, opt.resume, opt.fast, T.recipe_dir ~= nil)
]])
  local out, rc = S.tandem({'run', path, '--epochs=2', '--resume=5', '--fast'})
  t.eq(rc, 0, out)
  t.ok(out:find('2\t0.1\t5\ttrue\ttrue', 1, true), out)
  -- `--name value` as well as `--name=value`; a bare default's type is its rule.
  out, rc = S.tandem({'run', path, '--epochs', '3', '--lr', '1e-3', '--resume', 'x', '--fast'})
  t.eq(rc, 0, out)
  t.ok(out:find('3\t0.001\tx\ttrue\ttrue', 1, true), out)
  -- Mistakes: status 2, the option named, and no traceback.
  for _, case in ipairs{
    {{'--epoch=2'}, "unknown option '--epoch'; did you mean --epochs? (known: epochs, fast, lr, resume)"},
    {{'--epochs=ten'}, "recipe option --epochs must be a finite number, got 'ten' (default 10)"},
    {{'--epochs=nan'}, 'recipe option --epochs must be a finite number, got nan (default 10)'},
    {{'--epochs=1e400'}, 'recipe option --epochs must be a finite number, got inf (default 10)'},
    {{'--epochs=-inf'}, 'recipe option --epochs must be a finite number, got -inf (default 10)'},
    {{'--epochs'}, 'recipe option --epochs needs a value (--epochs=10 or --epochs 10)'},
    {{'--fast=maybe'}, "recipe option --fast must be true or false, got 'maybe' (default false)"},
    {{'extra'}, "unexpected argument 'extra' (options are --name=value"},
    {{'--=3'}, "option '--=3' has no name"},
  } do
    out, rc = S.tandem({'run', path, unpack(case[1])})
    t.eq(rc, 2, out)
    t.ok(out:find(case[2], 1, true), out)
    t.ok(not out:find('traceback', 1, true), out)
  end
  -- Devices: '0B' is no cap, a billion threads no machine's.
  local devices = recipe([[
local T = require 'tandem'
local opt = T.options(..., T.parallel.defaults{})
T.parallel.layout(opt)
]])
  out, rc = S.tandem({'run', devices, '--memory=0B'})
  t.eq(rc, 2, out)
  t.ok(out:find("recipe option --memory must be a size such as '512MB' above 0 ('' for none), got '0B'", 1, true), out)
  out, rc = S.tandem({'run', devices, '--threads=1000000000'})
  t.eq(rc, 2, out)  -- a command-line mistake, said without a traceback
  t.ok(out:find("option --threads must be 0 (the cores split between the devices) to 1024, got 1000000000", 1, true), out)
  t.ok(not out:find('stack traceback', 1, true), out)
end)

t.test('T.recipe_dir is the recipe\'s directory', function()
  local dir = S.tmpname('.d')
  os.execute('mkdir -p ' .. S.quote(dir))
  S.write(dir .. '/helper.lua', 'return 41')
  S.write(dir .. '/main.lua',
          "local T = require 'tandem'\nprint(dofile(T.recipe_dir .. '/helper.lua') + 1)\n")
  local out, rc = S.tandem({'run', dir .. '/main.lua'})
  t.eq(rc, 0, out)
  t.ok(out:find('42', 1, true), out)
  os.execute('rm -rf ' .. S.quote(dir))
end)

t.test('a failing recipe prints the error and a traceback, and exits 1', function()
  local path = recipe([[
local T = require 'tandem'
local function build() local c = T.nn.Conv2d(1, 2, 3, {padd = 1}); return c end
print('before')
build()
print('not reached')
]])
  local out, rc = S.tandem({'run', path})
  t.eq(rc, 1)
  t.ok(out:find('before', 1, true), out)
  t.ok(not out:find('not reached', 1, true), out)
  t.ok(out:find("error: " .. path .. ":2: nn.Conv2d: unknown option 'padd'", 1, true), out)
  t.ok(out:find('stack traceback:', 1, true), out)
  t.ok(out:find(path .. ':4: in main chunk', 1, true), out)
end)

t.test('errors from C++ keep their context lines', function()
  local path = recipe([[
local T = require 'tandem'
local net = T.nn.Sequential{T.nn.Linear(4, 2), T.nn.ReLU()}
net:forward(T.zeros{3, 5})
]])
  local out, rc = S.tandem({'run', path})
  t.eq(rc, 1)
  t.ok(out:find('error: ' .. path .. ':3: ', 1, true), out)
  t.ok(out:find("in layer 1 'fc1' (Linear)", 1, true), out)
end)

t.test('missing recipes and bad command lines', function()
  local out, rc = S.tandem({'run', '/nonexistent/recipe.lua'})
  t.eq(rc, 1)
  t.ok(out:find('error: cannot open /nonexistent/recipe.lua', 1, true), out)
  out, rc = S.tandem({'run'})
  t.eq(rc, 2)
  t.ok(out:find('usage: tandem run RECIPE', 1, true), out)
  out, rc = S.tandem({'run', recipe('print(1)'), '--=3'})
  t.eq(rc, 2)
  t.ok(out:find("option '--=3' has no name", 1, true), out)
  out, rc = S.tandem({'bogus'})
  t.eq(rc, 2)
  t.ok(out:find("unknown command 'bogus' (known: run, test, bench, ", 1, true), out)
  t.ok(out:find("help; `tandem help` for usage)", 1, true), out)
end)

t.test('help lists the commands', function()
  for _, flag in ipairs{'help', '--help', '-h'} do
    local out, rc = S.tandem({flag})
    t.eq(rc, 0)
    t.ok(out:find('tandem run RECIPE', 1, true), out)
    t.ok(out:find('tandem test FILE', 1, true), out)
  end
end)

t.test('tandem test reports each test and the totals', function()
  local path = recipe([[
local t = require 'tandem.test'
t.test('passes', function() t.eq({1, {2}}, {1, {2}}) end)
t.test('fails', function() t.near(1, 1.5, 0.1) end)
t.test('raises', function() t.raises(function() error('wanted words') end, 'wanted') end)
t.test('wrong words', function() t.raises(function() error('other') end, 'wanted') end)
]])
  local broken = recipe('this is not lua')
  local out, rc = S.tandem({'test', path, broken})
  t.eq(rc, 1)
  t.ok(out:find('ok 1 - passes', 1, true), out)
  t.ok(out:find('not ok 2 - fails: ', 1, true), out)
  t.ok(out:find('values differ by 0.5 (tolerance 0.1)', 1, true), out)
  t.ok(out:find('ok 3 - raises', 1, true), out)
  t.ok(out:find('not ok 4 - wrong words: ', 1, true), out)
  t.ok(out:find('not ok 5 - ' .. broken, 1, true), out)
  t.ok(out:find('\n2 passed, 3 failed\n', 1, true), out)
  local passing = recipe("local t = require 'tandem.test'\nt.test('a', function() end)")
  out, rc = S.tandem({'test', passing})
  t.eq(rc, 0)
  t.ok(out:find('\n1 passed, 0 failed\n', 1, true), out)
end)

S.cleanup()
