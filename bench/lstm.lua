-- One LSTM (or GRU) layer's forward + backward on the CPU, as issue 18 measures it against
-- PyTorch (bench/lstm_peers.py runs both and prints the ratios):
--   tandem run bench/lstm.lua --hidden=512 [--cell=lstm] [--batch=64] [--steps=28] [--input=28]
--                             [--threads=2] [--iters=20] [--warmup=5]
-- Prints one JSON line: the best and median milliseconds per forward + backward.
local T = require 'tandem'
local opts = T.options(..., {
  cell = {'lstm', 'the cell', choices = {'lstm', 'gru'}},
  hidden = {128, 'hidden units', kind = 'positive_int'},
  batch = {64, 'sequences per batch', kind = 'positive_int'},
  steps = {28, 'time steps', kind = 'positive_int'},
  input = {28, 'features per step', kind = 'positive_int'},
  layers = {1, 'stacked layers', kind = 'positive_int'},
  threads = {2, 'CPU threads', kind = 'positive_int'},
  iters = {20, 'timed iterations', kind = 'positive_int'},
  warmup = {5, 'untimed iterations first', kind = 'nonneg_int'},
})
local device = T.devices('cpu', 1, {threads = opts.threads})[1]
local make = opts.cell == 'gru' and T.nn.GRU or T.nn.LSTM
local rnn = make(opts.input, opts.hidden, {layers = opts.layers})
local x = T.randn({opts.batch, opts.steps, opts.input}, 1):to(device)
local dy = T.randn({opts.batch, opts.steps, opts.hidden}, 2):to(device)
local times = {}
for i = 1, opts.warmup + opts.iters do
  local start = T.now()
  rnn:forward(x, {mode = 'train'})
  rnn:backward(x, dy)
  if i > opts.warmup then times[#times + 1] = (T.now() - start) * 1000 end
end
table.sort(times)
print(('{"framework": "tandem", "cell": "%s", "hidden": %d, "batch": %d, "steps": %d, "threads": %d, '
       .. '"best_ms": %.3f, "median_ms": %.3f}')
      :format(opts.cell, opts.hidden, opts.batch, opts.steps, opts.threads, times[1], times[math.ceil(#times / 2)]))
