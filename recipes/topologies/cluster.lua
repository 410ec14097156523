-- Several nodes over a network: each node a server8_pcie-like box of `gpus` GPUs (in pairs
-- under PCIe switches on one socket) with one NIC on the socket, all NICs on one network
-- switch. Options: nodes (default 2), gpus per node (default 4, even), model (default 'V100'),
-- network (a link model: default 'ib_edr').
return function(opt)
  opt = opt or {}
  local model, network = opt.model or 'V100', opt.network or 'ib_edr'
  local gpus = opt.gpus or 4
  local nodes = {{name = 'network'}}
  for n = 0, (opt.nodes or 2) - 1 do
    local host = 'node' .. n
    nodes[#nodes + 1] = {name = host, parent = 'network', link = network}
    for w = 0, gpus / 2 - 1 do
      local switch = host .. '.switch' .. w
      nodes[#nodes + 1] = {name = switch, parent = host, link = 'pcie3_x16'}
      for g = 0, 1 do
        nodes[#nodes + 1] = {name = ('%s.gpu%d'):format(host, 2 * w + g), parent = switch,
                             link = 'pcie3_x16', device = model}
      end
    end
  end
  return {name = ('cluster%dx%d'):format(opt.nodes or 2, gpus), nodes = nodes}
end
