-- An 8-GPU PCIe server of H100 PCIe cards: pairs of cards behind four PCIe 5.0 switches, two
-- on each of two sockets joined by UPI (the usual layout of such servers; our assumption of a
-- generic one, not a named product). Each switch's uplink carries both its cards' traffic. With
-- bridges = true, each pair is joined by NVLink bridges: 600 GB/s both directions together
-- (H100 PCIe product brief), 300 a direction = 12 NVLink 4 links (server8_h100_nvl.lua).
-- Options: bridges (default false), model (default 'H100-PCIe').
return function(opt)
  opt = opt or {}
  local model = opt.model or 'H100-PCIe'
  local nodes, peers = {{name = 'host'}}, {}
  for s = 0, 1 do
    local socket = 'socket' .. s
    nodes[#nodes + 1] = {name = socket, parent = 'host', link = 'upi'}
    for w = 0, 1 do
      local switch = 'switch' .. (2 * s + w)
      nodes[#nodes + 1] = {name = switch, parent = socket, link = 'pcie5_x16'}
      local first = 4 * s + 2 * w
      for g = 0, 1 do
        nodes[#nodes + 1] = {name = 'gpu' .. (first + g), parent = switch, link = 'pcie5_x16',
                             device = model}
      end
      if opt.bridges then
        peers[#peers + 1] = {'gpu' .. first, 'gpu' .. (first + 1), link = 'nvlink4', count = 12}
      end
    end
  end
  return {name = opt.bridges and 'server8_h100_nvl' or 'server8_h100_pcie', nodes = nodes,
          peers = peers}
end
