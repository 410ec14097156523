-- Model averaging's algorithms from Lua (issue 18): T.Engine's parallel.averaging with its
-- hyper-parameters, their mistakes named, their recipe flags from the schema, a checkpoint
-- round trip between two averages, and recipes/mlp_averaging.lua on a few hundred real
-- Fashion-MNIST images. (Each algorithm against its definition: tests/core/parallel/
-- test_averaging.cpp.)
local t = require 'tandem.test'
local T = require 'tandem'
local S = dofile('tests/lua/support.lua')
local nn = T.nn

local function net()
  return nn.Sequential{nn.Flatten(), nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 3)}
end

local function engine(parallel, devices)
  return T.Engine{net = net(), devices = T.devices('cpu', devices or 2, {threads = 1}),
                  optim = T.optim.SGD{lr = 0.05, momentum = 0.9}, seed = 4, parallel = parallel}
end

local weights = S.weights

local function max_difference(a, b)
  local d = 0
  for name, v in pairs(a) do
    for i = 1, #v do d = math.max(d, math.abs(v[i] - b[name][i])) end
  end
  return d
end

t.test('every averaging algorithm trains, and they differ from one another', function()
  local seen = {}
  for _, algorithm in ipairs{'plain', 'bmuf', 'easgd', 'momentum'} do
    local e = engine({groups = 2, average_every = 2, averaging = algorithm})
    local first, last
    for step = 1, 12 do
      local r = e:step(S.toy_batch(16, step))
      first = first or r.loss
      last = r.loss
    end
    t.ok(last < first, ('%s: loss %.4f after 12 steps, %.4f at the first'):format(algorithm, last, first))
    seen[algorithm] = weights(e)
  end
  t.ok(max_difference(seen.plain, seen.bmuf) > 1e-4, 'bmuf moves otherwise than the plain mean')
  t.ok(max_difference(seen.plain, seen.easgd) > 1e-4, 'easgd moves otherwise than the plain mean')
  t.ok(max_difference(seen.plain, seen.momentum) > 1e-6, 'averaged momentum changes the next steps')
  -- The hyper-parameters reach the algorithm.
  local function bmuf(parallel)
    local e = engine(parallel)
    for step = 1, 4 do e:step(S.toy_batch(16, step)) end
    return weights(e)
  end
  local base = {groups = 2, average_every = 2, averaging = 'bmuf'}
  local tuned = {groups = 2, average_every = 2, averaging = 'bmuf', block_momentum = 0.3, block_lr = 0.7,
                 block_nesterov = false}
  t.ok(max_difference(bmuf(base), bmuf(tuned)) > 1e-5, 'block_momentum, block_lr and block_nesterov count')
end)

t.test('a checkpoint between two averages resumes exactly', function()
  local path = S.tmpname('.safetensors')
  for _, algorithm in ipairs{'bmuf', 'easgd', 'momentum'} do
    local p = {groups = 2, average_every = 2, averaging = algorithm}
    local straight = engine(p)
    for step = 1, 5 do straight:step(S.toy_batch(16, step)) end
    local first = engine(p)
    for step = 1, 3 do first:step(S.toy_batch(16, step)) end
    first:save(path)
    local resumed = engine(p)
    resumed:load(path)
    for step = 4, 5 do resumed:step(S.toy_batch(16, step)) end
    t.eq(max_difference(weights(straight), weights(resumed)), 0, algorithm)
  end
  os.remove(path)
end)

t.test('averaging mistakes are clear errors naming the option', function()
  t.raises(function() engine({groups = 2, averaging = 'bmuf'}) end,
           "parallel.averaging = 'bmuf' needs parallel.average_every > 0")
  t.raises(function() engine({groups = 2, average_every = 2, averaging = 'elastic'}) end,
           "parallel.averaging: unknown algorithm 'elastic' (known: plain, bmuf, easgd, momentum)")
  t.raises(function() engine({groups = 2, average_every = 2, averaging = 'bmuf', block_momentum = 1}) end,
           'parallel.block_momentum must be in [0, 1)')
  t.raises(function() engine({groups = 2, average_every = 2, averaging = 'bmuf', block_lr = 0}) end,
           'parallel.block_lr must be above 0')
  t.raises(function() engine({groups = 2, average_every = 2, averaging = 'easgd', elastic_alpha = 0.8}) end,
           "parallel.elastic_alpha = 0.8 with 2 replicas moves the centre past the replicas' mean")
  t.raises(function() engine({groups = 2, average_every = 2, averaging = 'easgd', block_lr = 2}) end,
           "parallel.block_lr is an option of averaging = 'bmuf', not of averaging = 'easgd'")
  t.raises(function() engine({groups = 2, average_every = 2, elastic_alpha = 0.1}) end,
           "parallel.elastic_alpha is an option of averaging = 'easgd', not of averaging = 'plain'")
  t.raises(function() engine({groups = 2, average_every = 2, averaging = 'easgd', elastic_alpha = 'big'}) end,
           'elastic_alpha')
end)

t.test('the recipes take the averaging options as flags', function()
  local defaults = T.parallel.defaults{}
  t.eq(defaults.averaging[1], 'plain')
  t.eq(defaults.block_momentum[1], 0)
  t.eq(defaults.block_lr[1], 1)
  t.eq(defaults.block_nesterov[1], true)
  t.eq(defaults.elastic_alpha[1], 0)
end)

t.test('mlp_averaging.lua compares synchronous SGD with every algorithm on 2 and 4 devices', function()
  if not S.have_fashion_mnist() then return end
  local out, rc = S.tandem{'run', 'recipes/mlp_averaging.lua', '--train=384', '--test=200', '--batch=64',
                           '--epochs=2', '--hidden=32', '--average_every=2', '--progress=plain'}
  t.eq(rc, 0, out)
  for _, n in ipairs{2, 4} do
    for _, method in ipairs{'sync', 'plain', 'bmuf', 'easgd', 'momentum'} do
      local label = ('%-8s x%d'):format(method, n)
      for epoch = 1, 2 do
        local accuracy, rate = out:match(label:gsub('%s', '%%s') .. ' epoch ' .. epoch ..
                                         ': train loss [%d.]+ acc [%d.]+ | test acc ([%d.]+) | (%d+) images/s')
        t.ok(accuracy and tonumber(accuracy) >= 0 and tonumber(accuracy) <= 1 and tonumber(rate) > 0,
             label .. ' epoch ' .. epoch .. ':\n' .. out)
      end
      local accuracy = out:match('\n' .. method .. '%s+' .. n .. '%s+([%d.]+)%s+%d+')
      -- 6 steps on 384 images: better than chance (0.1), for each.
      t.ok(accuracy and tonumber(accuracy) > 0.3, method .. ' x' .. n .. ' in the table:\n' .. out)
    end
  end
  local bad, bad_rc = S.tandem{'run', 'recipes/mlp_averaging.lua', '--methods=sync,elastic', '--train=64'}
  t.ok(bad_rc ~= 0 and bad:find('--methods: "elastic" is not one of its values', 1, true), bad)
end)
