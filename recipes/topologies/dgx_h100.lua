-- NVIDIA DGX H100: 8 H100 SXM5 GPUs, each with 18 NVLink 4 links into four NVSwitches (one
-- fabric, 450 GB/s a direction a GPU in total, shared by its peers), PCIe 5.0 switches of two
-- GPUs (and two ConnectX-7 NDR NICs) each, two on each of the two Intel Xeon 8480C sockets,
-- joined by UPI (NVIDIA DGX H100 User Guide, "Hardware overview"; H100 datasheet). Option:
-- model (default 'H100').
return function(opt)
  opt = opt or {}
  local model = opt.model or 'H100'
  local nodes, gpus = {{name = 'host'}}, {}
  for s = 0, 1 do
    local socket = 'socket' .. s
    nodes[#nodes + 1] = {name = socket, parent = 'host', link = 'upi'}
    for w = 0, 1 do
      local switch = 'switch' .. (2 * s + w)
      nodes[#nodes + 1] = {name = switch, parent = socket, link = 'pcie5_x16'}
      for g = 0, 1 do
        local gpu = 'gpu' .. (4 * s + 2 * w + g)
        nodes[#nodes + 1] = {name = gpu, parent = switch, link = 'pcie5_x16', device = model}
        gpus[#gpus + 1] = gpu
      end
    end
  end
  return {name = 'dgx_h100', nodes = nodes,
          fabrics = {{name = 'nvswitch', link = 'nvlink4', count = 18, devices = gpus}}}
end
