-- NVIDIA DGX A100: 8 A100 SXM4 GPUs, each with 12 NVLink 3 links into six NVSwitches (one
-- fabric: a GPU's 12 links are shared by all its peers, 300 GB/s a direction in total), and a
-- PCIe 4.0 tree beside it: four PCIe switches of two GPUs (and two HDR NICs) each, two on each
-- of the two AMD EPYC 7742 sockets, joined by Infinity Fabric (NVIDIA DGX A100 System
-- Architecture whitepaper, 2020; DGX A100 User Guide). The NICs matter between machines only
-- (cluster_dgx.lua). Option: model (default 'A100'; 'A100-80GB' for the 640 GB system).
local here = debug.getinfo(1, 'S').source:gsub('^@', ''):gsub('[^/]*$', '')

return function(opt)
  opt = opt or {}
  local spec = dofile(here .. 'server8_pcie.lua'){model = opt.model or 'A100', pcie = 'pcie4_x16',
                                                  sockets = 'xgmi'}
  local gpus = {}
  for g = 0, 7 do gpus[#gpus + 1] = 'gpu' .. g end
  return {name = 'dgx_a100', nodes = spec.nodes,
          fabrics = {{name = 'nvswitch', link = 'nvlink3', count = 12, devices = gpus}}}
end
