-- Kill -9 at any moment of a checkpoint write loses nothing: a training process is killed with
-- SIGKILL at four points of its third save (the failpoints of core/base/atomic_file.cpp: the
-- temporary just created, half written, written and synced, renamed over the checkpoint), then
-- resumed from what is on disk. The checkpoint there is always a complete one (the second, or
-- the third once renamed), the resumed run ends with exactly the weights of a run never
-- interrupted, and the killed write's temporary is gone after the next save.
local t = require 'tandem.test'
local T = require 'tandem'
local S = dofile('tests/lua/support.lua')
local host = require 'tandem.host'

local recipe = S.tmpname('.lua')
S.write(recipe, [[
local T = require 'tandem'
local opt = T.options(..., {
  dir = {'', 'the checkpoint folder'},
  steps = {4, 'steps to train', kind = 'positive_int'},
  resume = {'', 'a checkpoint to continue from'},
})
local nn = T.nn
local net = nn.Sequential{nn.Flatten(), nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 3)}
local engine = T.Engine{net = net, optim = T.optim.SGD{lr = 0.1, momentum = 0.9}, seed = 7,
                        devices = T.devices('cpu', 1, {threads = 1})}
if opt.resume ~= '' then
  local meta = assert(engine:load(opt.resume))
  print('resumed at step ' .. meta.step)
end
for step = engine:steps() + 1, opt.steps do
  local images = T.randn({8, 1, 8, 8}, step)
  local labels = T.tensor({0, 1, 2, 0, 1, 2, 0, 1}, nil, {dtype = 'i32'})
  engine:step(images, labels)
  engine:save(opt.dir .. '/ck.safetensors', {step = step})
end
local names, sum = {}, 0
for name in pairs(net:parameters()) do names[#names + 1] = name end
table.sort(names)
for _, name in ipairs(names) do
  for _, v in ipairs(net:parameters()[name]:to_flat()) do sum = sum + v * v end
end
print(('weights %.12g'):format(sum))
]])

-- Runs the recipe with `env` (a prefix such as "TANDEM_KILL_DURING_WRITE=half:3"); returns the
-- output and the exit status (137: killed by SIGKILL).
local function run(env, args)
  local parts = {env or '', S.quote(host.executable), 'run', S.quote(recipe)}
  for _, a in ipairs(args) do parts[#parts + 1] = S.quote(a) end
  local pipe = assert(io.popen(table.concat(parts, ' ') .. ' 2>&1; echo "[rc=$?]"', 'r'))
  local out = pipe:read('*a')
  pipe:close()
  return out, tonumber(out:match('%[rc=(%d+)%]%s*$'))
end

local function temporaries(dir)
  local pipe = io.popen('ls ' .. S.quote(dir))
  local names = {}
  for name in pipe:lines() do
    if name:find('.tmp.', 1, true) then names[#names + 1] = name end
  end
  pipe:close()
  return names
end

local function fresh_dir()
  local dir = S.tmpname('_ck')
  os.execute('rm -rf ' .. S.quote(dir) .. ' && mkdir -p ' .. S.quote(dir))
  return dir
end

local reference_dir = fresh_dir()
local reference, reference_rc = run(nil, {'--dir=' .. reference_dir})
local want = reference:match('weights (%S+)')

t.test('an uninterrupted run, the reference', function()
  t.eq(reference_rc, 0, reference)
  t.ok(want, reference)
end)

for _, case in ipairs{{'opened', 2}, {'half', 2}, {'synced', 2}, {'renamed', 3}} do
  local point, on_disk = case[1], case[2]
  t.test(('killed at "%s" of a save: the last complete checkpoint resumes exactly'):format(point), function()
    local dir = fresh_dir()
    local out, rc = run('TANDEM_KILL_DURING_WRITE=' .. point .. ':3', {'--dir=' .. dir})
    t.eq(rc, 137, 'killed by SIGKILL during the third save:\n' .. out)
    t.ok(not out:find('weights', 1, true), 'it did not get to the end:\n' .. out)
    -- What is on disk is a whole checkpoint: the one before, or the new one once renamed.
    local check = T.Engine{net = T.nn.Sequential{T.nn.Flatten(), T.nn.Linear(64, 256), T.nn.ReLU(), T.nn.Linear(256, 3)},
                           optim = T.optim.SGD{lr = 0.1, momentum = 0.9}, devices = T.devices('cpu', 1, {threads = 1})}
    t.eq(check:load(dir .. '/ck.safetensors').step, tostring(on_disk))
    check:free()
    local left = temporaries(dir)
    t.eq(#left, point == 'renamed' and 0 or 1, 'the killed write\'s temporary: ' .. table.concat(left, ', '))
    -- Resumed, it ends where the uninterrupted run ended, bit for bit, and cleans up.
    out, rc = run(nil, {'--dir=' .. dir, '--resume=' .. dir .. '/ck.safetensors'})
    t.eq(rc, 0, out)
    t.ok(out:find('resumed at step ' .. on_disk, 1, true), out)
    t.eq(out:match('weights (%S+)'), want, out)
    t.eq(temporaries(dir), {}, 'no temporary left after the next saves')
    os.execute('rm -rf ' .. S.quote(dir))
  end)
end

os.execute('rm -rf ' .. S.quote(reference_dir))
S.cleanup()
t.finish()
