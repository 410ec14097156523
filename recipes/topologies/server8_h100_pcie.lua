-- An 8-GPU PCIe server of H100 PCIe cards: pairs of cards behind four PCIe 5.0 switches, two
-- on each of two sockets joined by UPI (the usual layout of such servers; our assumption of a
-- generic one, not a named product): server8_pcie.lua's tree. Each switch's uplink carries both
-- its cards' traffic. With bridges = true, each pair is joined by NVLink bridges: 600 GB/s both
-- directions together (H100 PCIe product brief), 300 a direction = 12 NVLink 4 links
-- (server8_h100_nvl.lua). Options: bridges (default false), model (default 'H100-PCIe').
local here = debug.getinfo(1, 'S').source:gsub('^@', ''):gsub('[^/]*$', '')

return function(opt)
  opt = opt or {}
  local spec = dofile(here .. 'server8_pcie.lua'){model = opt.model or 'H100-PCIe',
                                                  pcie = 'pcie5_x16', sockets = 'upi'}
  local peers = {}
  if opt.bridges then
    for first = 0, 6, 2 do
      peers[#peers + 1] = {'gpu' .. first, 'gpu' .. (first + 1), link = 'nvlink4', count = 12}
    end
  end
  return {name = opt.bridges and 'server8_h100_nvl' or 'server8_h100_pcie', nodes = spec.nodes,
          peers = peers}
end
