-- nn.ScaledDotProductAttention and nn.AdditiveAttention: nodes of a graph that train in T.Engine,
-- their weights read back after a step, and the mistakes they name.
local t = require 'tandem.test'
local T = require 'tandem'
local nn = T.nn
local batch = dofile('tests/lua/support.lua').toy_batch

-- Each row of an N x Tq x Tk weights tensor sums to 1; with `causal`, keys after the query weigh 0.
local function check_rows(weights, causal)
  local shape, w = weights:shape(), weights:to_flat()
  local n, tq, tk = shape[1], shape[2], shape[3]
  for b = 0, n - 1 do
    for i = 0, tq - 1 do
      local sum = 0
      for j = 0, tk - 1 do
        local a = w[(b * tq + i) * tk + j + 1]
        if causal and j > i then t.eq(a, 0, ('sample %d, query %d, key %d'):format(b + 1, i + 1, j + 1)) end
        sum = sum + a
      end
      t.near(sum, 1, 1e-5)
    end
  end
end

t.test('attention in a graph trains in T.Engine and its weights read back', function()
  -- An image as 8 rows of 8 pixels: a GRU encodes them, Bahdanau attention over its states, and
  -- causal self-attention over the raw rows; both joined along features, then a classifier.
  local align = nn.AdditiveAttention(12, 12, 16, {name = 'align'})
  local self_attention = nn.ScaledDotProductAttention{causal = true, name = 'self'}
  local g = nn.Graph{name = 'attend'}
  local x = g:input('x')
  local h = g:add(nn.GRU(8, 12, {name = 'encoder'}), x)
  local a = g:add(align, h, h)
  local s = g:add(self_attention, x, x, x)
  g:output(g:add(nn.Concat(3), a, s))
  t.eq(g:output_shape{4, 8, 8}, {4, 8, 20})
  local names = {}
  for name in pairs(align:parameters()) do names[#names + 1] = name end
  table.sort(names)
  t.eq(names, {'bias', 'key_weight', 'query_weight', 'score_weight'})
  t.raises(function() align:attention_weights() end, "'align' (AdditiveAttention) has no attention weights yet")

  local net = nn.Sequential{nn.Reshape(8, 8), g, nn.Flatten(), nn.Linear(8 * 20, 3)}
  local e = T.Engine{net = net, optim = T.optim.Adam{lr = 0.01}, devices = T.devices('cpu', 1, {threads = 1})}
  local first, last
  for step = 1, 30 do
    last = e:step(batch(16, step % 3)).loss
    first = first or last
  end
  t.ok(last < first * 0.5, ('loss %g -> %g'):format(first, last))
  local w = align:attention_weights()
  t.eq(w:shape(), {16, 8, 8})
  check_rows(w, false)
  check_rows(self_attention:attention_weights(), true)
  -- An evaluation forward replaces them with its own batch's.
  g:forward(T.randn({2, 8, 8}, 5))
  t.eq(align:attention_weights():shape(), {2, 8, 8})
end)

t.test('attention options, shapes and mistakes', function()
  local sdpa = nn.ScaledDotProductAttention{scale = 0.5}
  t.eq(sdpa:options_text(), 'scale 0.5')
  t.eq(nn.ScaledDotProductAttention():options_text(), 'scale 1/sqrt(d)')
  t.eq(nn.AdditiveAttention(4, 3, 5, {bias = false}):options_text(), 'query 4, key 3, hidden 5, no bias')
  t.raises(function() nn.ScaledDotProductAttention{scale = 0} end, "option 'scale' must be a positive number")
  t.raises(function() nn.ScaledDotProductAttention{casual = true} end, "unknown option 'casual'")
  t.raises(function() nn.AdditiveAttention(4, 3) end, 'hidden_size must be a positive integer')
  t.raises(function() nn.ReLU():attention_weights() end,
           "bad self to 'attention_weights' (an attention layer expected, got a ReLU layer)")
  local g = nn.Graph()
  g:input('q')
  g:input('k')
  g:output(g:add(nn.ScaledDotProductAttention{name = 'attn'}, 'q', 'k'))
  local y = g:forward{T.randn({2, 3, 4}, 1), T.randn({2, 5, 4}, 2)}
  t.eq(y[1]:shape(), {2, 3, 4})
  t.raises(function() g:forward{T.randn({2, 3, 4}, 1), T.randn({2, 5, 6}, 2)} end,
           "'attn' (ScaledDotProductAttention): queries have 4 features but keys 6")
  t.raises(function() nn.Sequential{nn.ScaledDotProductAttention()}:forward(T.randn({2, 3, 4}, 1)) end,
           'use it as a node of an nn.Graph')
end)

t.test('attention trains on 2 groups of 2 micro-batches as on one device', function()
  local function build()
    local align = nn.AdditiveAttention(12, 12, 16, {name = 'align'})
    local g = nn.Graph{name = 'attend'}
    local x = g:input('x')
    local h = g:add(nn.GRU(8, 12, {name = 'encoder'}), x)
    local a = g:add(align, h, h)
    local s = g:add(nn.ScaledDotProductAttention{causal = true, name = 'self'}, x, x, x)
    g:output(g:add(nn.Concat(3), a, s))
    return nn.Sequential{nn.Reshape(8, 8), g, nn.Flatten(), nn.Linear(8 * 20, 3)}, align
  end
  local one_net, one = build()
  local split_net, split = build()
  local e1 = T.Engine{net = one_net, optim = T.optim.SGD{lr = 0.1}, devices = T.devices('cpu', 1, {threads = 1})}
  local e2 = T.Engine{net = split_net, optim = T.optim.SGD{lr = 0.1}, devices = T.devices('cpu', 2, {threads = 1}),
                      parallel = {groups = 2, micro_batches = 2}}
  for step = 1, 5 do
    e1:step(batch(16, step))
    e2:step(batch(16, step))
  end
  for name, p in pairs(one:parameters()) do
    local want, got = p:to_flat(), split:parameters()[name]:to_flat()
    for i = 1, #want do t.near(got[i], want[i], 1e-4, name) end
  end
  -- The weights read back are the last micro-batch's of group 1: 16 / 2 groups / 2 micro-batches.
  t.eq(one:attention_weights():shape(), {16, 8, 8})
  t.eq(split:attention_weights():shape(), {4, 8, 8})
  check_rows(split:attention_weights(), false)
end)
