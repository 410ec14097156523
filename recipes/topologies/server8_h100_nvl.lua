-- server8_h100_pcie.lua with its cards' NVLink bridges: each pair of H100 PCIe cards joined
-- by 12 NVLink 4 links (300 GB/s a direction). Option: model (default 'H100-PCIe').
local here = debug.getinfo(1, 'S').source:gsub('^@', ''):gsub('[^/]*$', '')

return function(opt)
  opt = opt or {}
  return dofile(here .. 'server8_h100_pcie.lua'){model = opt.model, bridges = true}
end
