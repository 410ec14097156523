-- The first seed's machines (Tencent's multi-GPU framework, seed 000): Tesla K20c cards on PCIe
-- 2.0 x16 (the K20's board specification), in pairs behind PCIe switches, as the seed's Figure 5
-- wires its 8-GPU server: switches 0-1 on one CPU, 2-3 on the other, the CPUs joined through
-- the I/O hub (QPI). With gpus = 4 (the default, the seed's 4-GPU experiments) the four cards
-- are the first CPU's two switches: the seed does not say which slots it used; this is our
-- assumption. Each switch's one uplink carries both its cards' traffic to the CPU.
-- Options: gpus (4 or 8), model (default 'K20c').
return function(opt)
  opt = opt or {}
  local gpus, model = opt.gpus or 4, opt.model or 'K20c'
  if gpus ~= 4 and gpus ~= 8 then
    error(('server_k20c: gpus must be 4 or 8, got %s'):format(tostring(gpus)), 0)
  end
  local nodes = {{name = 'ioh'}}
  for s = 0, gpus / 4 - 1 do
    local socket = 'socket' .. s
    nodes[#nodes + 1] = {name = socket, parent = 'ioh', link = 'qpi'}
    for w = 0, 1 do
      local switch = 'switch' .. (2 * s + w)
      nodes[#nodes + 1] = {name = switch, parent = socket, link = 'pcie2_x16'}
      for g = 0, 1 do
        nodes[#nodes + 1] = {name = 'gpu' .. (4 * s + 2 * w + g), parent = switch,
                             link = 'pcie2_x16', device = model}
      end
    end
  end
  return {name = ('server%d_k20c'):format(gpus), nodes = nodes}
end
