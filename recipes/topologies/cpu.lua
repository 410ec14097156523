-- One machine of N CPU devices: Tandem's devices on this computer. Each device is a worker
-- thread with `threads` kernel threads and a memory cap; all share the machine's cores, which
-- the simulator accounts for. Options: devices (default 2), threads (default cores / devices),
-- cores (default: this machine's), memory per device (default 4GB).
--   T.plan.topology('cpu', {devices = 4, threads = 1})
return function(opt)
  opt = opt or {}
  local T = require 'tandem'
  local cores = opt.cores or T.cores()
  local n = opt.devices or 2
  local threads = opt.threads or math.max(1, math.floor(cores / n))
  local nodes = {{name = 'host', cores = cores}}
  for i = 0, n - 1 do
    nodes[#nodes + 1] = {name = ('cpu:%d'):format(i), parent = 'host', link = 'shared_memory',
                         device = 'cpu', threads = threads, memory = opt.memory or '4GB'}
  end
  return {name = ('cpu%dx%dt'):format(n, threads), nodes = nodes}
end
