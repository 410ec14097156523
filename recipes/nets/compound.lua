-- The third seed's compound model for 1x28x28 images (Fashion-MNIST standing in for its private
-- data): an LSTM over the image's 28 rows (a sequence: the user's immediate interest), an
-- autoencoder compressing its 4x4-pooled pixels (a vector of 49 features) trained on its
-- reconstruction beside the prediction (nn.AddLoss), and additive attention of the LSTM's state
-- over the rows (its weights say what the prediction looked at), joined by a classifier head.
-- Returns the net, the sample shape, and {placement = each sub-model on a device of its own
-- (parallel.placement), attention = the attention layer}.
--
-- With opt.interactions = {length = L, features = F, items = V} (what T.data.interactions
-- returns beside its data set) the same structure reads users' interaction data instead: a
-- sample 1 x 1 x (L + F) is cut into the L item ids (0 pads), embedded and read by the LSTM,
-- and the F features, compressed by the autoencoder; the attention weighs the embedded items.
local nn = require('tandem').nn

local function interaction_net(opt, shape)
  local hidden, code_width, embed = opt.hidden or 128, opt.code or 16, opt.embedding or 32
  local L, F, V = shape.length, shape.features, shape.items
  assert(type(L) == 'number' and L >= 1 and type(F) == 'number' and F >= 1 and type(V) == 'number' and V >= 1,
         'opt.interactions needs length, features and items >= 1 (as T.data.interactions returns them)')
  local g = nn.Graph{name = 'compound'}
  local x = g:input('x')
  local sample = g:add(nn.Reshape(L + F, {name = 'sample'}), x)
  -- The item ids, oldest first and padded in front: embedded, the LSTM's last state is the
  -- user's immediate interest.
  local items = g:add(nn.Narrow(2, 1, L, {name = 'items'}), sample)
  local embedded = g:add(nn.Embedding(V, embed, {name = 'embed'}), items)
  local lstm = g:add(nn.LSTM(embed, hidden, {output = 'last', name = 'lstm'}), embedded)
  -- The features: any real values, so rebuilt linearly (no Sigmoid as for pixels).
  local features = g:add(nn.Narrow(2, L + 1, F, {name = 'features'}), sample)
  local width = math.max(2 * code_width, 32)
  local code = g:add(nn.Linear(width, code_width, {name = 'code'}),
                     g:add(nn.ReLU{name = 'enc_relu'}, g:add(nn.Linear(F, width, {name = 'enc1'}), features)))
  local recon = g:add(nn.Linear(width, F, {name = 'recon'}),
                      g:add(nn.ReLU{name = 'dec_relu'}, g:add(nn.Linear(code_width, width, {name = 'dec1'}), code)))
  local reconstructed = g:add(nn.AddLoss(nn.MSE(), {weight = opt.reconstruction or 0.5, name = 'reconstruction'}),
                              code, recon, features)
  -- Attention: which of the user's items the interest looks at (padding included: it learns
  -- to give the padding's embedding little weight).
  local query = g:add(nn.Reshape(1, hidden, {name = 'query'}), lstm)
  local attention = nn.AdditiveAttention(hidden, embed, 32, {name = 'attention'})
  local attended = g:add(nn.Reshape(embed, {name = 'attended'}), g:add(attention, query, embedded))
  local joined = g:add(nn.Concat{name = 'joined'}, lstm, reconstructed, attended)
  local head = g:add(nn.ReLU{name = 'head_relu'},
                     g:add(nn.Linear(hidden + code_width + embed, 64, {name = 'head1'}), joined))
  g:output(g:add(nn.Linear(64, opt.classes or 10, {name = 'logits'}), head))
  local placement = {
    {'compound.sample', 'compound.items', 'compound.embed', 'compound.lstm'},
    {'compound.features', 'compound.enc1', 'compound.enc_relu', 'compound.code', 'compound.dec1',
     'compound.dec_relu', 'compound.recon', 'compound.reconstruction'},
    {'compound.query', 'compound.attention', 'compound.attended', 'compound.joined', 'compound.head1',
     'compound.head_relu', 'compound.logits'},
  }
  return nn.Sequential{g}, {1, 1, L + F}, {placement = placement, attention = attention}
end

return function(opt)
  opt = opt or {}
  if opt.interactions then return interaction_net(opt, opt.interactions) end
  local hidden, code_width = opt.hidden or 128, opt.code or 16
  local g = nn.Graph{name = 'compound'}
  local x = g:input('x')
  -- The sequence: 28 steps of 28 values; the LSTM's last state is the immediate interest.
  local rows = g:add(nn.Reshape(28, 28, {name = 'rows'}), x)
  local lstm = g:add(nn.LSTM(28, hidden, {output = 'last', name = 'lstm'}), rows)
  -- The features: 49 pooled pixels, compressed to a code and rebuilt from it.
  local features = g:add(nn.Flatten{name = 'features'}, g:add(nn.AvgPool2d(4, {name = 'pool'}), x))
  local code = g:add(nn.Linear(32, code_width, {name = 'code'}),
                     g:add(nn.ReLU{name = 'enc_relu'}, g:add(nn.Linear(49, 32, {name = 'enc1'}), features)))
  local recon = g:add(nn.Sigmoid{name = 'recon'},
                      g:add(nn.Linear(32, 49, {name = 'dec2'}),
                            g:add(nn.ReLU{name = 'dec_relu'}, g:add(nn.Linear(code_width, 32, {name = 'dec1'}), code))))
  local reconstructed = g:add(nn.AddLoss(nn.MSE(), {weight = opt.reconstruction or 0.5, name = 'reconstruction'}),
                              code, recon, features)
  -- Attention: the interest asks which rows matter; their weighted sum is what it saw.
  local query = g:add(nn.Reshape(1, hidden, {name = 'query'}), lstm)
  local attention = nn.AdditiveAttention(hidden, 28, 32, {name = 'attention'})
  local attended = g:add(nn.Reshape(28, {name = 'attended'}), g:add(attention, query, rows))
  local joined = g:add(nn.Concat{name = 'joined'}, lstm, reconstructed, attended)
  local head = g:add(nn.ReLU{name = 'head_relu'},
                     g:add(nn.Linear(hidden + code_width + 28, 64, {name = 'head1'}), joined))
  g:output(g:add(nn.Linear(64, opt.classes or 10, {name = 'logits'}), head))
  local placement = {
    {'compound.rows', 'compound.lstm'},
    {'compound.pool', 'compound.features', 'compound.enc1', 'compound.enc_relu', 'compound.code', 'compound.dec1',
     'compound.dec_relu', 'compound.dec2', 'compound.recon', 'compound.reconstruction'},
    {'compound.query', 'compound.attention', 'compound.attended', 'compound.joined', 'compound.head1',
     'compound.head_relu', 'compound.logits'},
  }
  return nn.Sequential{g}, {1, 28, 28}, {placement = placement, attention = attention}
end
