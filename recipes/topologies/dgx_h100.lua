-- NVIDIA DGX H100: 8 H100 SXM5 GPUs, each with 18 NVLink 4 links into four NVSwitches (one
-- fabric, 450 GB/s a direction a GPU in total, shared by its peers), PCIe 5.0 switches of two
-- GPUs (and two ConnectX-7 NDR NICs) each, two on each of the two Intel Xeon 8480C sockets,
-- joined by UPI (NVIDIA DGX H100 User Guide, "Hardware overview"; H100 datasheet). Its
-- third-generation NVSwitches reduce in the switch (NVLink SHARP, "NVIDIA H100 Tensor Core GPU
-- Architecture" whitepaper): NCCL's NVLS all-reduce, `reduces = true`. Option: model (default
-- 'H100').
local here = debug.getinfo(1, 'S').source:gsub('^@', ''):gsub('[^/]*$', '')

return function(opt)
  opt = opt or {}
  local spec = dofile(here .. 'server8_pcie.lua'){model = opt.model or 'H100', pcie = 'pcie5_x16',
                                                  sockets = 'upi'}
  local gpus = {}
  for g = 0, 7 do gpus[#gpus + 1] = 'gpu' .. g end
  return {name = 'dgx_h100', nodes = spec.nodes,
          fabrics = {{name = 'nvswitch', link = 'nvlink4', count = 18, devices = gpus, reduces = true}}}
end
