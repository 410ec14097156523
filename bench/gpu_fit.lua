-- The analytic GPU model (core/plan/analytic_costs.cpp) against per-layer measurements:
--   build/tandem run bench/gpu_fit.lua [--table=bench/measured/h200-2026-11-26/layers.txt]
--                                      [--device=H200] [--precision=fp32] [--rows=FILE]
-- For every net and batch in the table (`tandem bench --device=cuda --benchmark` output), each
-- top-level layer's measured forward and backward against what the model predicts on --device,
-- summed by the class of the kernels that make the layer up; then each net's step. With
-- --rows=FILE it also writes one CSV row per kernel of each layer and pass, with the layer's
-- measured time and the kernel's class, FLOPs, bytes and matrix dimensions: what the model's
-- fractions, size curves and fixed costs are fitted to (bench/gpu_fit.py). --precision is the
-- table's (tools/device/gpu-check's half_layers.txt is fp16): the model predicts in it.
local T = require 'tandem'

local opt = T.options(..., {
  table = 'bench/measured/h200-2026-11-26/layers.txt', device = 'H200', precision = 'fp32', rows = '',
})

local nets_dir = (T.recipe_dir or 'bench') .. '/../recipes/nets/'

-- {{net =, batch =, layers = {{name, forward_ms, backward_ms}}, update_ms, step_ms}}
local function read_table(path)
  local runs, run = {}, nil
  for line in assert(io.open(path)):lines() do
    local net, batch = line:match('^== (%S+) batch (%d+)')
    if net then
      run = {net = net, batch = tonumber(batch), layers = {}}
      runs[#runs + 1] = run
    elseif run then
      local update, step = line:match('^SGD update ([%d.]+) ms; whole step ([%d.]+) ms')
      if update then
        run.update_ms, run.step_ms = tonumber(update), tonumber(step)
      else
        local name, fwd, bwd = line:match('^(%S+)%s.-%s([%d.]+)%s+([%d.]+)%s+[%d.]+%%$')
        if name and name ~= 'layer' then
          run.layers[#run.layers + 1] = {name = name, forward_ms = tonumber(fwd), backward_ms = tonumber(bwd)}
        end
      end
    end
  end
  return runs
end

local rows = opt.rows ~= '' and assert(io.open(opt.rows, 'w'))
if rows then
  rows:write('net,batch,layer,pass,measured_ms,step_ms,update_ms,kernel,class,flops,bytes,rows,columns,inner\n')
end

print(('| net | batch | measured fwd+bwd ms | predicted | predicted / measured |'))
print('|---|---|---|---|---|')
local summary = {}
for _, run in ipairs(read_table(opt.table)) do
  local net, sample = dofile(nets_dir .. run.net .. '.lua')({})
  local costs = T.plan.costs{net = net, sample = sample, cost = 'analytic', precision = opt.precision}
  local predicted = costs:layers{device = opt.device, batch = run.batch}
  -- The planner weighs a block's units one by one ('block1.body.conv1'): summed back into
  -- the top-level layers the table measured.
  local by_name = {}
  for _, l in ipairs(predicted) do
    local top = l.name:match('^[^.]+')
    local t = by_name[top] or {forward_ms = 0, backward_ms = 0, kernels = {}}
    t.forward_ms, t.backward_ms = t.forward_ms + l.forward_ms, t.backward_ms + l.backward_ms
    for _, k in ipairs(l.kernels) do t.kernels[#t.kernels + 1] = k end
    by_name[top] = t
  end
  local measured_total, predicted_total = 0, 0
  for _, m in ipairs(run.layers) do
    local p = assert(by_name[m.name], 'no layer ' .. m.name .. ' in ' .. run.net)
    measured_total = measured_total + m.forward_ms + m.backward_ms
    predicted_total = predicted_total + p.forward_ms + p.backward_ms
    if rows then
      for _, pass in ipairs{'forward', 'backward'} do
        for _, k in ipairs(p.kernels) do
          if k.forward_ms > 0 then  -- a view launches nothing
            rows:write(table.concat({run.net, run.batch, m.name, pass, m[pass .. '_ms'], run.step_ms, run.update_ms,
                                     k.name, k.class, k.flops, k.bytes, k.rows, k.columns, k.inner}, ','), '\n')
          end
        end
      end
    end
  end
  summary[#summary + 1] = ('| %s | %d | %.2f | %.2f | %.2f |'):format(run.net, run.batch, measured_total,
                                                                      predicted_total, predicted_total / measured_total)
end
for _, line in ipairs(summary) do print(line) end
if rows then rows:close() end
