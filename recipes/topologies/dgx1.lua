-- A DGX-1-style box: 8 V100 SXM2 GPUs in NVLink 2's hybrid cube mesh, and PCIe 3.0 switches to
-- two sockets beside it, after NVIDIA's "DGX-1 with Tesla V100 System Architecture" whitepaper
-- (2017). Each GPU has six NVLinks: its quad is fully connected, with two links on two of the
-- pairs, and two links go to its counterpart in the other quad. Which pairs are doubled is our
-- reading of the whitepaper's figure.
local here = debug.getinfo(1, 'S').source:gsub('^@', ''):gsub('[^/]*$', '')

return function(opt)
  opt = opt or {}
  -- The PCIe tree is the 8-GPU server's.
  local spec = dofile(here .. 'server8_pcie.lua'){model = opt.model or 'V100-SXM2'}
  local peers = {}
  local function link(a, b, count)
    peers[#peers + 1] = {'gpu' .. a, 'gpu' .. b, link = 'nvlink2', count = count}
  end
  for _, q in ipairs{0, 4} do  -- each quad fully connected
    link(q, q + 1, 1); link(q + 2, q + 3, 1); link(q, q + 2, 1); link(q + 1, q + 3, 1)
    link(q, q + 3, 2); link(q + 1, q + 2, 2)
  end
  for i = 0, 3 do link(i, i + 4, 2) end  -- the cube's edges between the quads
  return {name = 'dgx1', nodes = spec.nodes, peers = peers}
end
