-- NVIDIA DGX A100: 8 A100 SXM4 GPUs, each with 12 NVLink 3 links into six NVSwitches (one
-- fabric: a GPU's 12 links are shared by all its peers, 300 GB/s a direction in total), and a
-- PCIe 4.0 tree beside it: four PCIe switches of two GPUs (and two HDR NICs) each, two on each
-- of the two AMD EPYC 7742 sockets, joined by Infinity Fabric (NVIDIA DGX A100 System
-- Architecture whitepaper, 2020; DGX A100 User Guide). The NICs matter between machines only
-- (cluster_dgx.lua). Option: model (default 'A100'; 'A100-80GB' for the 640 GB system).
return function(opt)
  opt = opt or {}
  local model = opt.model or 'A100'
  local nodes, gpus = {{name = 'host'}}, {}
  for s = 0, 1 do
    local socket = 'socket' .. s
    nodes[#nodes + 1] = {name = socket, parent = 'host', link = 'xgmi'}
    for w = 0, 1 do
      local switch = 'switch' .. (2 * s + w)
      nodes[#nodes + 1] = {name = switch, parent = socket, link = 'pcie4_x16'}
      for g = 0, 1 do
        local gpu = 'gpu' .. (4 * s + 2 * w + g)
        nodes[#nodes + 1] = {name = gpu, parent = switch, link = 'pcie4_x16', device = model}
        gpus[#gpus + 1] = gpu
      end
    end
  end
  return {name = 'dgx_a100', nodes = nodes,
          fabrics = {{name = 'nvswitch', link = 'nvlink3', count = 12, devices = gpus}}}
end
