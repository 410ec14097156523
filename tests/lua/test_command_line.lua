-- Options declared once (lua/tandem/command_line.lua, tools/tandem/tool_args.h): parsing,
-- checks that name the option, --help for every command, and no traceback for a mistake.
local t = require 'tandem.test'
local T = require 'tandem'
local S = dofile('tests/lua/support.lua')
local command_line = require 'tandem.command_line'
local host = require 'tandem.host'

local function recipe(text)
  local path = S.tmpname('.lua')
  S.write(path, text)
  return path
end

-- A command-line mistake: status 2, the words, and no Lua traceback.
local function refused(args, words)
  local out, rc = S.tandem(args)
  t.eq(rc, 2, table.concat(args, ' ') .. ' -> ' .. out)
  t.ok(out:find(words, 1, true), ('%s: lacks %q in:\n%s'):format(table.concat(args, ' '), words, out))
  t.ok(not out:find('traceback', 1, true), 'no traceback for a command-line mistake:\n' .. out)
end

t.test('each kind of option takes its values and refuses others, naming the option', function()
  local dir = S.tmpname('_dir')
  os.execute('mkdir -p ' .. S.quote(dir))
  local file = S.tmpname('.txt')
  S.write(file, 'x')
  local cases = {
    -- kind, default, accepted, refused, words
    {'int', 0, {-3, 0, 7}, {2.5, 'x', true}, 'an integer'},
    {'positive_int', 1, {1, 64}, {0, -1, 2.5, 1e300}, 'a positive integer'},
    {'nonneg_int', 0, {0, 3}, {-1, 0.5}, 'a non-negative integer'},
    {'number', 0, {-1.5, 0, 1e10}, {0 / 0, math.huge, 'x'}, 'a finite number'},
    {'positive_number', 1, {1e-9, 3}, {0, -2}, 'a positive number'},
    {'nonneg_number', 0, {0, 2.5}, {-0.1}, 'a non-negative number'},
    {'fraction', 0, {0, 0.99}, {1, -0.1}, 'a number in [0, 1)'},
    {'boolean', false, {true, false}, {1, 'yes'}, 'true or false'},
    {'string', '', {'a', ''}, {true}, 'a string'},
    {'dir', '', {dir, ''}, {file, '/no/such/dir'}, 'an existing directory'},
    {'file', '', {file, ''}, {dir, '/no/such/file'}, 'an existing file'},
    {'size', '', {'512MB', '2GiB', ''}, {'0B', 'lots', '12XB'}, "a size such as '512MB'"},
  }
  for _, c in ipairs(cases) do
    local specs = {x = {c[2], 'an option', kind = c[1]}}
    for _, v in ipairs(c[3]) do t.eq(T.options({x = v}, specs).x, v, c[1] .. ' takes ' .. tostring(v)) end
    for _, v in ipairs(c[4]) do
      t.raises(function() T.options({x = v}, specs) end, {'recipe option --x must be', c[5], 'got'})
    end
  end
  -- Text from a command line converts to the option's type.
  t.eq(T.options({x = '12'}, {x = {1, 'n', kind = 'positive_int'}}).x, 12)
  t.eq(T.options({x = 'false'}, {x = {true, 'b'}}).x, false)
  t.eq(T.options({x = 5}, {x = {'a', 's'}}).x, '5')
  -- Choices, numbers or strings.
  t.eq(T.options({c = 1}, {c = {3, 'channels', choices = {3, 1}}}).c, 1)
  t.raises(function() T.options({c = 2}, {c = {3, 'channels', choices = {3, 1}}}) end,
           'recipe option --c must be 3 or 1, got 2 (default 3)')
  t.raises(function() T.options({m = 'z'}, {m = {'a', 'mode', choices = {'a', 'b', 'c'}}}) end,
           "must be 'a', 'b' or 'c', got 'z' (default 'a')")
  S.cleanup()
  os.execute('rm -rf ' .. S.quote(dir))
end)

t.test('a recipe author\'s mistakes in declarations are named', function()
  t.raises(function() T.options({}, {x = {1, 'n', kind = 'count'}}) end,
           "option 'x' has an unknown kind 'count' (kinds: boolean, dir, file, fraction, int,")
  t.raises(function() T.options({}, {x = {0, 'n', kind = 'positive_int'}}) end,
           "option 'x' of kind positive_int has the default 0, which is not a positive integer")
  t.raises(function() T.options({}, {x = {1, 'n', kidn = 'int'}}) end, "option 'x' is declared with an unknown field 'kidn'")
  t.raises(function() T.options({}, {x = {nil, 'n'}}) end, "option 'x' needs a default")
  t.raises(function() T.options({}, {x = {'a', 'n', choices = {}}}) end, "option 'x': choices must be a non-empty list")
  t.raises(function() T.options({}, 5) end, "bad argument #2 to 'T.options'")
  t.raises(function() T.options(5, {}) end, "bad argument #1 to 'T.options'")
end)

t.test('unknown options suggest the near names; positional arguments are refused', function()
  local specs = {epochs = 1, eval_batch = 2, lr = 0.1}
  t.raises(function() T.options({epoch = 3}, specs) end,
           "unknown option '--epoch'; did you mean --epochs? (known: epochs, eval_batch, lr)")
  local msg = t.raises(function() T.options({zzz = 3}, specs) end, "unknown option '--zzz' (known:")
  t.ok(not msg:find('did you mean', 1, true), msg)
  t.raises(function() T.options({'extra'}, specs) end, "unexpected argument 'extra'")
  -- A command declares its positional arguments.
  local opt = T.options({'net.lua', batch = 4}, {batch = 1},
                        {usage = 'tandem x NET', who = 'tandem x', positional = {'NET'}})
  t.eq(opt[1], 'net.lua')
  t.eq(opt.batch, 4)
  -- The exit object: its message reads as the error, its status is 2.
  local ok, err = pcall(command_line.usage_error, 'a mistake')
  t.ok(not ok and tostring(err) == 'a mistake' and err.status == 2)
end)

t.test('override keeps a declared option\'s help and kind under a new default', function()
  local base = {epochs = {10, 'passes', kind = 'positive_int'}, lr = 0.1}
  local merged = command_line.override(base, {epochs = 3, lr = 0.5, extra = true})
  t.eq(merged.epochs, {3, 'passes', kind = 'positive_int'})
  t.eq(base.epochs[1], 10, 'the base is not changed')
  t.eq(merged.lr, 0.5)
  t.eq(merged.extra, true)
end)

-- tools/tandem/omp_wait_policy.cpp: OpenMP's idle threads spin a bounded time, timed on this CPU,
-- unless the user set the policy or the spin count.
t.test('OpenMP threads spin about 75 us when idle unless OMP_WAIT_POLICY or GOMP_SPINCOUNT says otherwise', function()
  local function spin_count(env)
    local pipe = assert(io.popen(('env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT %s OMP_DISPLAY_ENV=verbose %s help 2>&1')
                                 :format(env, S.quote(host.executable))))
    local out = pipe:read('*a')
    pipe:close()
    local last  -- libgomp shows its settings again in the restarted process: the last counts
    for count in out:gmatch("GOMP_SPINCOUNT = '(%d+)'") do last = count end
    return last, out
  end
  -- Timed on this CPU: at least the floor of 100 turns, far below libgomp's own 300,000 (about
  -- 3-30 ms of spinning; a preempted timing only lowers it).
  local count, out = spin_count('')
  count = tonumber(count)
  t.ok(count and count >= 100 and count < 300000, out)
  t.eq(spin_count('OMP_WAIT_POLICY=passive'), '0')
  t.eq(spin_count('OMP_WAIT_POLICY=active'), '30000000000')
  t.eq(spin_count('GOMP_SPINCOUNT=1000'), '1000')
  -- Started again, the process keeps its name (top, ps): 'tandem', not 'exe'.
  local script = S.tmpname('.lua')
  S.write(script, "local f = io.open('/proc/self/comm') print('name: ' .. f:read('*l')) f:close()")
  local pipe = assert(io.popen(('env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT %s run %s 2>&1')
                               :format(S.quote(host.executable), S.quote(script))))
  local out = pipe:read('*a')
  pipe:close()
  t.ok(out:find('name: tandem', 1, true), out)
  S.cleanup()
end)

t.test('every command takes --help and exits 0', function()
  for _, command in ipairs{'run', 'test', 'bench', 'plan', 'devices', 'mkdb', 'import-idx', 'mean',
                           'dbinfo', 'gen-images', 'import-interactions', 'gen-interactions', 'plot', 'help'} do
    local out, rc = S.tandem({command, '--help'})
    t.eq(rc, 0, command .. ' --help: ' .. out)
    t.ok(out:find('usage', 1, true) or out:find('Tandem', 1, true), command .. ' --help: ' .. out)
  end
  -- `tandem help COMMAND` is `tandem COMMAND --help`.
  t.eq(S.tandem({'help', 'mkdb'}), S.tandem({'mkdb', '--help'}))
  -- The data tools list every option they take.
  local out = S.tandem({'mkdb', '--help'})
  for _, option in ipairs{'--resize=N', '--encoding=png|jpeg|raw', '--shuffle', '--check=DB', '--strict'} do
    t.ok(out:find(option, 1, true), 'mkdb --help lacks ' .. option .. ':\n' .. out)
  end
  -- tandem plan --help lists all its options with their defaults.
  out = S.tandem({'plan', '--help'})
  for _, option in ipairs{'--batch=0', '--topology=machine', '--devices=0', '--cost=auto', '--top=10',
                          '--write=', '--trace=', '--trace-plan=1', '--iterations=7', '--algorithm=ring',
                          '--overlap=true'} do
    t.ok(out:find(option, 1, true), 'plan --help lacks ' .. option .. ':\n' .. out)
  end
  -- and the names it knows: topologies, device and link models.
  for _, name in ipairs{'topologies (--topology): machine, cluster', 'dgx1', 'server8_pcie', 'V100', 'H100',
                        'nvlink2'} do
    t.ok(out:find(name, 1, true), 'plan --help lacks ' .. name .. ':\n' .. out)
  end
end)

t.test('tandem run RECIPE --help lists the recipe\'s options, defaults and help', function()
  local out, rc = S.tandem({'run', 'recipes/fashion_mnist.lua', '--help'})
  t.eq(rc, 0, out)
  t.ok(out:find('usage: tandem run recipes/fashion_mnist.lua', 1, true), out)
  t.ok(out:find('The default recipe: a small batch-norm CNN', 1, true), 'the recipe\'s own description:\n' .. out)
  t.ok(out:find('%-%-epochs=10%s+passes over the training set'), out)
  t.ok(out:find('%-%-layout=auto%s+the activation layout'), out)
  t.ok(out:find('devices and parallelism:', 1, true), out)
  t.ok(out:find('%-%-groups=1%s+worker groups'), out)
  t.ok(not out:find('Sequential', 1, true), '--help stops before anything is built:\n' .. out)
end)

t.test('the recipes refuse wrong options by name before training', function()
  for _, case in ipairs{
    {'--batch=2.5', 'recipe option --batch must be a positive integer, got 2.5 (default 128)'},
    {'--batch=0', 'recipe option --batch must be a positive integer, got 0 (default 128)'},
    {'--max_steps=-1', 'recipe option --max_steps must be a non-negative integer, got -1 (default 0)'},
    {'--epochs=-1', 'recipe option --epochs must be a positive integer, got -1'},
    {'--data=/no/such', "recipe option --data must be an existing directory, got '/no/such'"},
    {'--layout=nhwc', "recipe option --layout must be 'auto', 'contiguous' or 'channels_last', got 'nhwc'"},
    {'--source=disk', "recipe option --source must be 'memory' or 'lmdb', got 'disk'"},
    {'--pipeline=zigzag', "recipe option --pipeline must be 'gpipe' or '1f1b', got 'zigzag'"},
    {'--groups=0', 'recipe option --groups must be a positive integer, got 0 (default 1)'},
    {'--lr=-1', 'recipe option --lr must be a positive number, got -1'},
    {'--momentum=1.5', 'recipe option --momentum must be a number in [0, 1), got 1.5'},
  } do
    refused({'run', 'recipes/fashion_mnist.lua', case[1]}, case[2])
  end
  refused({'run', 'recipes/resnet_hybrid.lua', '--stages', 'two'}, 'recipe option --stages must be a positive integer')
  refused({'run', 'recipes/folder_jpeg.lua', '--channels=2'}, 'recipe option --channels must be 3 or 1, got 2')
end)

t.test('the command line takes --name value as well as --name=value', function()
  local out, rc = S.tandem({'plan', 'recipes/nets/resnet20.lua', '--topology', 'server8_pcie', '--batch', '256',
                            '--top', '2'})
  t.eq(rc, 0, out)
  t.ok(out:find('plans for a batch of 256', 1, true), out)
  local dir = S.tmpname('_gen')
  out, rc = S.tandem({'gen-images', dir, '--classes', '2', '--per-class', '3', '--min-size', '16',
                      '--max-size', '16'})
  t.eq(rc, 0, out)
  t.ok(out:find('wrote 6 jpg images in 2 classes', 1, true), out)
  os.execute('rm -rf ' .. S.quote(dir))
end)

t.test('command-line mistakes of the tools: status 2, named, no traceback', function()
  refused({'plan', 'recipes/nets/resnet20.lua'}, 'tandem plan: --batch=B is required')
  refused({'plan', 'recipes/nets/resnet20.lua', '--batch=64', '--topology=nope'},
          "unknown topology 'nope' (known: machine, cluster, cluster_dgx, cpu, dgx1, dgx_a100, dgx_h100, server8_h100_nvl, server8_h100_pcie, server8_pcie, server_k20c")
  refused({'plan', 'no_such.lua', '--batch=4'}, 'tandem plan: cannot open no_such.lua')
  refused({'plan'}, 'usage: tandem plan RECIPE|NET.lua --batch=B')
  refused({'plan', 'recipes/nets/resnet20.lua', '--batch=64', '--cost=guess'},
          "tandem plan: option --cost must be 'auto', 'measured' or 'analytic', got 'guess'")
  refused({'bench'}, 'usage: tandem bench NET.lua')
  refused({'bench', 'no_such.lua'}, 'tandem bench: cannot open no_such.lua')
  refused({'mkdb', 'a'}, 'tandem mkdb: needs SOURCE DB')
  refused({'mkdb', 'a', 'b', 'c'}, "tandem mkdb: unexpected argument 'c'")
  refused({'mkdb', 'a', 'b', '--bogus'}, 'tandem mkdb: unknown option --bogus (known: --resize,')
  refused({'mkdb', 'a', 'b', '--channels=2'}, 'tandem mkdb: --channels must be 0, 1 or 3, got 2')
  refused({'dbinfo', 'x', '--limit'}, 'tandem dbinfo: --limit needs a value (--limit=N)')
  refused({'dbinfo', 'x', '--limit=many'}, "tandem dbinfo: --limit must be an integer in [1,")
  refused({'import-idx', 'a', 'b'}, 'tandem import-idx: needs IMAGES LABELS DB')
  refused({'gen-images'}, 'tandem gen-images: needs DIR')
  refused({'devices', 'x'}, "tandem devices: unexpected argument 'x'")
  refused({'run'}, 'tandem run: needs RECIPE')
  refused({'run', '--epochs=3'}, 'tandem run: the recipe comes first')
  refused({'test'}, 'tandem test: needs FILE...')
end)

t.test('a plan made for other devices is refused, saying what differs', function()
  local layout = recipe([[
local T = require 'tandem'
local opt = T.options(..., T.parallel.defaults{batch = {16, 'images a step', kind = 'positive_int'}})
local net = T.nn.Sequential{T.nn.Flatten(), T.nn.Linear(64, 3)}
local devices = T.parallel.layout(opt, net, {1, 8, 8})
print(('ran on %d devices'):format(#devices))
]])
  local function plan_file(fields)
    local path = S.tmpname('.lua')
    S.write(path, 'return {groups = 2, stages = 1, micro_batches = 1, pipeline = "gpipe", split = {}, '
                  .. 'threads = 1, batch = 16, ' .. fields .. '}')
    return path
  end
  local gpus = plan_file("topology = 'server8_pcie', device = 'cuda', model = 'V100', cores = 0")
  refused({'run', layout, '--plan=' .. gpus},
          "was made for 2 V100 device(s) (topology 'server8_pcie'); this run's are --device=cpu")
  local big = plan_file("topology = 'cpu2x32t', device = 'cpu', model = 'cpu', cores = 4096")
  refused({'run', layout, '--plan=' .. big}, "was made for a machine of 4096 cores (topology 'cpu2x32t'); this one has")
  -- This machine's own plan runs; another batch is a warning, as the layout still holds.
  local cores = require('tandem.core').cores()
  local mine = plan_file(("topology = 'cpu', device = 'cpu', model = 'cpu', cores = %d"):format(cores))
  local out, rc = S.tandem({'run', layout, '--plan=' .. mine, '--batch=32'})
  t.eq(rc, 0, out)
  t.ok(out:find('ran on 2 devices', 1, true), out)
  t.ok(out:find("was made for a batch of 16; this run's is 32", 1, true), out)
  S.cleanup()
end)

t.test('tandem plot draws several runs\' logs on one chart', function()
  local a, b, png = S.tmpname('.jsonl'), S.tmpname('.jsonl'), S.tmpname('.png')
  for i, path in ipairs{a, b} do
    local log = T.MetricsLog(path, {append = false, chart = false})
    for epoch = 1, 3 do log:write{epoch = epoch, train_loss = i / epoch, test_accuracy = 1 - 0.1 * i / epoch} end
  end
  local out, rc = S.tandem({'plot', a, b, '--out', png})
  t.eq(rc, 0, out)
  t.ok(out:find('wrote ' .. png .. ': 2 runs against the epoch', 1, true), out)
  t.eq(S.read(png):sub(1, 8), '\137PNG\r\n\026\n')
  refused({'plot'}, 'tandem plot: needs LOG...')
  refused({'plot', a, '--x=time'}, "tandem plot: --x must be epoch or step, got 'time'")
  out, rc = S.tandem({'plot', '/no/such.jsonl'})
  t.ok(rc == 1 and out:find('cannot open /no/such.jsonl', 1, true), out)
  S.write(a, '{"epoch": 1, "loss": 1}\nnot json\n')
  out, rc = S.tandem({'plot', a})
  t.ok(rc == 1 and out:find(', line 2: not a metrics line', 1, true), out)
  S.cleanup()
end)

t.test('mkdb where nothing decodes leaves no database, so the rerun works', function()
  local dir = S.tmpname('_bad')
  os.execute('mkdir -p ' .. S.quote(dir .. '/a') .. ' ' .. S.quote(dir .. '/b'))
  S.write(dir .. '/a/1.jpg', 'not a jpeg')
  S.write(dir .. '/b/2.png', 'not a png')
  local db = dir .. '_db'
  local out, rc = S.tandem({'mkdb', dir, db})
  t.eq(rc, 1, out)
  t.ok(out:find('could be decoded (2 skipped); nothing written to ' .. db, 1, true), out)
  t.eq(io.open(db .. '/data.mdb', 'rb'), nil, 'no database left behind')
  t.eq(io.open(db .. '.partial/data.mdb', 'rb'), nil, 'no partial database left behind')
  -- The mended folder: the same command now works.
  os.execute(('%s gen-images %s --classes=2 --per-class=2 --min-size=16 --max-size=16 >/dev/null')
             :format(S.quote(require('tandem.host').executable), S.quote(dir .. '_good')))
  out, rc = S.tandem({'mkdb', dir .. '_good', db})
  t.eq(rc, 0, out)
  t.ok(out:find('wrote 4 records', 1, true), out)
  os.execute('rm -rf ' .. S.quote(dir) .. ' ' .. S.quote(db) .. ' ' .. S.quote(dir .. '_good'))
end)

t.test('a recipe copied out of recipes/ still finds nets/ (T.recipe_path)', function()
  local dir = S.tmpname('_copy')
  os.execute('mkdir -p ' .. S.quote(dir))
  S.write(dir .. '/mine.lua', [[
local T = require 'tandem'
local build = dofile(T.recipe_path('nets/lenet5.lua'))
local net, shape = build{}
print('net from ' .. T.recipe_path('nets/lenet5.lua') .. ': ' .. net:kind() .. ' ' .. table.concat(shape, 'x'))
S = T.recipe_path('nets/no_such.lua')
]])
  local out, rc = S.tandem({'run', dir .. '/mine.lua'})
  t.eq(rc, 1, out)
  t.ok(out:find('/recipes/nets/lenet5.lua: Sequential 1x28x28', 1, true), out)
  t.ok(out:find("no file nets/no_such.lua beside the recipe", 1, true), out)
  -- A file beside the recipe comes first.
  os.execute('mkdir -p ' .. S.quote(dir .. '/nets'))
  S.write(dir .. '/nets/lenet5.lua', 'return function() return nil, {7} end')
  S.write(dir .. '/mine.lua', [[
local T = require 'tandem'
print('beside: ' .. T.recipe_path('nets/lenet5.lua'))
]])
  out, rc = S.tandem({'run', dir .. '/mine.lua'})
  t.eq(rc, 0, out)
  t.ok(out:find('beside: ' .. dir .. '/nets/lenet5.lua', 1, true), out)
  os.execute('rm -rf ' .. S.quote(dir))
end)

t.finish()
