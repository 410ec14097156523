-- recipes/topologies: every file loads and `tandem plan` runs on it for a small net; NVSwitch
-- fabrics and the machines of a cluster show in the description; bad fabrics are clear errors
-- naming the fabric (issue 20).
local t = require 'tandem.test'
local T = require 'tandem'
local S = dofile('tests/lua/support.lua')

t.test('every file in recipes/topologies loads', function()
  local names = T.plan.topologies()
  for _, expected in ipairs{'server_k20c', 'server8_pcie', 'dgx1', 'dgx_a100', 'dgx_h100',
                            'server8_h100_pcie', 'server8_h100_nvl', 'cluster', 'cluster_dgx'} do
    local found = false
    for _, name in ipairs(names) do found = found or name == expected end
    t.ok(found, expected .. ' in ' .. table.concat(names, ', '))
  end
  for _, name in ipairs(names) do
    local topo = T.plan.topology(name)
    t.ok(topo.device_count >= 2, name .. ': ' .. topo.device_count .. ' devices')
  end
end)

t.test('fabrics, bridges and machines show in the description', function()
  local a100 = T.plan.topology('dgx_a100')
  t.eq(a100.device_count, 8)
  t.ok(a100.description:find('fabric nvswitch: gpu0, .*each 12 x nvlink3'), a100.description)
  t.ok(T.plan.topology('dgx_h100').description:find('each 18 x nvlink4'))
  t.ok(T.plan.topology('server8_h100_nvl').description:find('peer gpu0 <%-> gpu1: 12 x nvlink4'))
  t.ok(not T.plan.topology('server8_h100_pcie').description:find('peer'))
  local k20 = T.plan.topology('server_k20c')
  t.eq(k20.device_count, 4)
  t.ok(k20.description:find('pcie2_x16'), k20.description)
  t.eq(T.plan.topology('server_k20c', {gpus = 8}).device_count, 8)
  t.raises(function() T.plan.topology('server_k20c', {gpus = 3}) end, 'gpus must be 4 or 8')
  for _, model in ipairs{'a100', 'h100', 'v100', 'A100-80GB'} do
    local c = T.plan.topology('cluster_dgx', {nodes = 3, model = model})
    t.eq(c.device_count, 24, model)
    t.ok(c.description:find('3 machines'), c.description)
  end
  t.raises(function() T.plan.topology('cluster_dgx', {model = 'p100'}) end, "unknown model 'p100'")
end)

t.test('bad fabrics are clear errors naming the fabric', function()
  local function with(change)
    local spec = dofile('recipes/topologies/dgx_a100.lua')()
    change(spec)
    return function() T.plan.topology(spec) end
  end
  t.raises(with(function(s) s.fabrics[1].devices[2] = 'gpu42' end),
           "fabric 'nvswitch': 'gpu42' is not a device")
  t.raises(with(function(s) s.fabrics[1].link = 'nvlink9' end), {"fabric 'nvswitch'", "unknown link model 'nvlink9'"})
  t.raises(with(function(s) s.fabrics[1].lanes = 12 end), {"fabric 'nvswitch'", "unknown field 'lanes'"})
  t.raises(with(function(s) s.fabrics[1].devices = 'gpu0' end), "'devices' must be a list")
  t.raises(with(function(s) s.nodes[4].count = 0 end), "field 'count' must be an integer")
end)

t.test('tandem plan runs on every GPU topology', function()
  for _, name in ipairs(T.plan.topologies()) do
    if name ~= 'cpu' then
      local out, rc = S.tandem{'plan', 'recipes/nets/resnet20.lua', '--topology=' .. name, '--batch=64',
                               '--top=3'}
      t.eq(rc, 0, name .. ': ' .. out)
      t.ok(out:find('plans for a batch of 64'), name .. ': ' .. out)
    end
  end
  -- The tree all-reduce on a cluster of DGX machines.
  local out, rc = S.tandem{'plan', 'recipes/nets/resnet20.lua', '--topology=cluster_dgx', '--nodes=2',
                           '--model=h100', '--batch=64', '--algorithm=tree', '--top=3'}
  t.eq(rc, 0, out)
  t.ok(out:find('16x1x1') or out:find('plans for a batch of 64'), out)
end)
