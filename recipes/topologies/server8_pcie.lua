-- The 8-GPU server of the design (and of the first seed's Figure 5): GPUs in pairs behind four
-- PCIe 3.0 switches; switches 0-1 hang off socket 0, switches 2-3 off socket 1; the sockets are
-- joined through the I/O hub (QPI). No NVLink: GPU peers on different sockets go through host
-- memory. Option: model (default 'V100').
return function(opt)
  opt = opt or {}
  local model = opt.model or 'V100'
  local nodes = {{name = 'ioh'}}
  for s = 0, 1 do
    local socket = 'socket' .. s
    nodes[#nodes + 1] = {name = socket, parent = 'ioh', link = 'qpi'}
    for w = 0, 1 do
      local switch = 'switch' .. (2 * s + w)
      nodes[#nodes + 1] = {name = switch, parent = socket, link = 'pcie3_x16'}
      for g = 0, 1 do
        nodes[#nodes + 1] = {name = 'gpu' .. (4 * s + 2 * w + g), parent = switch,
                             link = 'pcie3_x16', device = model}
      end
    end
  end
  return {name = 'server8_pcie', nodes = nodes}
end
