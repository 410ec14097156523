-- Several DGX machines over InfiniBand, each GPU's traffic to the network through the NICs
-- of its PCIe switch (GPUDirect RDMA: not through the CPUs), all NICs on one non-blocking
-- switch:
--   a100: DGX A100, 8 HDR NICs, two on each PCIe switch of two GPUs (one a GPU);
--   h100: DGX H100, 8 NDR NICs, likewise;
--   v100: DGX-1 V100, 4 EDR NICs, one on each PCIe switch of two GPUs (one a GPU pair).
-- Inside a machine the GPUs talk over their NVSwitch fabric (a100, h100) or the DGX-1's
-- NVLink mesh (v100) as in dgx_a100.lua, dgx_h100.lua and dgx1.lua; the sockets are left out
-- (no GPU copy crosses them). Options: nodes (default 2), model ('a100', 'h100' or 'v100',
-- or a device model of one of them, 'A100-80GB' say; default 'a100'), nics per machine (default
-- the DGX's: 8, or 4 for v100; 4 puts one on each PCIe switch, as some HGX servers have).
local here = debug.getinfo(1, 'S').source:gsub('^@', ''):gsub('[^/]*$', '')
local kinds = {
  a100 = {device = 'A100', pcie = 'pcie4_x16', nic = 'ib_hdr', nics = 2, nvlink = 'nvlink3',
          links = 12},
  h100 = {device = 'H100', pcie = 'pcie5_x16', nic = 'ib_ndr', nics = 2, nvlink = 'nvlink4',
          links = 18, reduces = true},
  v100 = {device = 'V100-SXM2', pcie = 'pcie3_x16', nic = 'ib_edr', nics = 1},
}

return function(opt)
  opt = opt or {}
  local model = opt.model or 'a100'
  local name = tostring(model):lower():match('^%a%d+') or ''
  local kind = kinds[name]
  if not kind then
    error(("cluster_dgx: unknown model '%s'; known: a100, h100, v100"):format(tostring(model)), 0)
  end
  local device = model == name and kind.device or model
  local count = opt.nodes or 2
  local nics = opt.nics and opt.nics / 4 or kind.nics
  if nics ~= 1 and nics ~= 2 then
    error(('cluster_dgx: nics must be 4 or 8 a machine, got %s'):format(tostring(opt.nics)), 0)
  end
  local nodes, peers, fabrics = {{name = 'network'}}, {}, {}
  local mesh = kind.nvlink == nil and dofile(here .. 'dgx1.lua')() or nil
  for n = 0, count - 1 do
    local prefix, gpus = ('node%d.'):format(n), {}
    for w = 0, 3 do
      local switch = prefix .. 'switch' .. w
      nodes[#nodes + 1] = {name = switch, parent = 'network', link = kind.nic, count = nics}
      for g = 0, 1 do
        local gpu = prefix .. 'gpu' .. (2 * w + g)
        nodes[#nodes + 1] = {name = gpu, parent = switch, link = kind.pcie, device = device}
        gpus[#gpus + 1] = gpu
      end
    end
    if mesh then
      for _, p in ipairs(mesh.peers) do
        peers[#peers + 1] = {prefix .. p[1], prefix .. p[2], link = p.link, count = p.count}
      end
    else
      fabrics[#fabrics + 1] = {name = prefix .. 'nvswitch', link = kind.nvlink,
                               count = kind.links, devices = gpus, reduces = kind.reduces}
    end
  end
  return {name = ('cluster_dgx_%s_%d'):format(name, count), nodes = nodes, peers = peers,
          fabrics = fabrics}
end
