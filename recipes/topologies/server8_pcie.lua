-- The 8-GPU server of the design (and of the first seed's Figure 5): GPUs in pairs behind four
-- PCIe switches; switches 0-1 hang off socket 0, switches 2-3 off socket 1; the sockets are
-- joined through the I/O hub. No NVLink: GPU peers on different sockets go through host memory.
-- Options: model (default 'V100'), pcie (the switches' links, default 'pcie3_x16'), sockets
-- (the link between them, default 'qpi'). The DGX and H100 servers share this tree
-- (dgx1.lua, dgx_a100.lua, dgx_h100.lua, server8_h100_pcie.lua) and add their NVLink to it.
return function(opt)
  opt = opt or {}
  local model, pcie = opt.model or 'V100', opt.pcie or 'pcie3_x16'
  local nodes = {{name = 'ioh'}}
  for s = 0, 1 do
    local socket = 'socket' .. s
    nodes[#nodes + 1] = {name = socket, parent = 'ioh', link = opt.sockets or 'qpi'}
    for w = 0, 1 do
      local switch = 'switch' .. (2 * s + w)
      nodes[#nodes + 1] = {name = switch, parent = socket, link = pcie}
      for g = 0, 1 do
        nodes[#nodes + 1] = {name = 'gpu' .. (4 * s + 2 * w + g), parent = switch,
                             link = pcie, device = model}
      end
    end
  end
  return {name = 'server8_pcie', nodes = nodes}
end
