-- T.nn: the layer constructors. Each checks its arguments and options here, then calls one
-- C++ constructor (core.nn_*, lua/bind_nn.cpp) with plain values.
--   nn.Conv2d(1, 32, 3, {pad = 1})            nn.Sequential{nn.Conv2d(...), nn.ReLU(), ...}
-- Every layer constructor takes `name` among its options; an unnamed layer is named by kind
-- and position when it is added to a Sequential ("conv1", "relu2").
local core = require 'tandem.core'
local o = require 'tandem.options'

local nn = {}
local layer_mt = core.metatables.Layer

local function is_layer(v) return getmetatable(v) == layer_mt end

-- Calls a C++ constructor; its errors (a ConfigError such as groups not dividing the channels)
-- are raised again at `level` (the recipe line calling the nn constructor), not here.
local function make(level, ctor, ...)
  local ok, result = pcall(ctor, ...)
  if not ok then error(result, level + 1) end
  return result
end

function nn.Conv2d(in_channels, out_channels, kernel, opts)
  local fn = 'nn.Conv2d'
  o.arg(fn, 1, 'in_channels', in_channels, o.positive_int)
  o.arg(fn, 2, 'out_channels', out_channels, o.positive_int)
  local k = o.arg(fn, 3, 'kernel size', kernel, o.pair(o.positive_int))
  opts = o.check(fn, opts, {
    stride = o.pair(o.positive_int), pad = o.pair(o.nonneg_int), groups = o.positive_int,
    bias = o.boolean, init = o.string, name = o.name,
  })
  local stride, pad = opts.stride or {1, 1}, opts.pad or {0, 0}
  local bias = opts.bias == nil or opts.bias
  local layer = make(2, core.nn_conv2d, in_channels, out_channels, k[1], k[2], stride[1],
                     stride[2], pad[1], pad[2], opts.groups or 1, bias, opts.init or 'kaiming',
                     opts.name)
  return layer
end

function nn.BatchNorm2d(channels, opts)
  local fn = 'nn.BatchNorm2d'
  o.arg(fn, 1, 'channels', channels, o.positive_int)
  opts = o.check(fn, opts, {eps = o.positive_number, momentum = o.fraction(0, 1), name = o.name})
  local layer = make(2, core.nn_batch_norm2d, channels, opts.eps or 1e-5, opts.momentum or 0.1,
                     opts.name)
  return layer
end

-- The element-wise activations: one C++ layer (core.nn_activation) with an algorithm.
-- nn.ReLU(), nn.Sigmoid(), nn.Tanh() take only a name.
local function plain_activation(kind, algorithm)
  return function(opts)
    opts = o.check('nn.' .. kind, opts, {name = o.name})
    return make(2, core.nn_activation, algorithm, 0, opts.name)
  end
end
nn.ReLU = plain_activation('ReLU', 'relu')
nn.Sigmoid = plain_activation('Sigmoid', 'sigmoid')
nn.Tanh = plain_activation('Tanh', 'tanh')

-- nn.GELU() is exact (erf); nn.GELU{approximate = 'tanh'} is its tanh approximation.
function nn.GELU(opts)
  opts = o.check('nn.GELU', opts, {approximate = o.one_of{'none', 'tanh'}, name = o.name})
  local algorithm = opts.approximate == 'tanh' and 'gelu_tanh' or 'gelu'
  local layer = make(2, core.nn_activation, algorithm, 0, opts.name)
  return layer
end

-- As PyTorch: nn.LeakyReLU(0.2), nn.LeakyReLU{negative_slope = 0.2}, default slope 0.01.
function nn.LeakyReLU(slope, opts)
  local fn = 'nn.LeakyReLU'
  if type(slope) == 'table' and getmetatable(slope) == nil and opts == nil then
    slope, opts = nil, slope
  elseif slope ~= nil then
    o.arg(fn, 1, 'negative_slope', slope, o.finite_number)
  end
  opts = o.check(fn, opts, {negative_slope = o.finite_number, name = o.name})
  if slope ~= nil and opts.negative_slope ~= nil then
    error(fn .. ': negative_slope given twice (as argument #1 and as an option)', 2)
  end
  local layer = make(2, core.nn_activation, 'leaky_relu', slope or opts.negative_slope or 0.01,
                     opts.name)
  return layer
end

-- Options shared by the two windowed poolings (errors raised at level 4: the constructor's caller).
local function pool_options(fn, kernel, opts, extra)
  local k = o.arg(fn, 1, 'kernel size', kernel, o.pair(o.positive_int), 4)
  local spec = {stride = o.pair(o.positive_int), pad = o.pair(o.nonneg_int), ceil = o.boolean,
                name = o.name}
  for key, check in pairs(extra or {}) do spec[key] = check end
  local checked = o.check(fn, opts, spec, 4)
  -- Stride 0 tells the C++ side "the kernel size" (non-overlapping windows).
  checked.stride = checked.stride or {0, 0}
  checked.pad = checked.pad or {0, 0}
  return k, checked
end

function nn.MaxPool2d(kernel, opts)
  local k, p = pool_options('nn.MaxPool2d', kernel, opts)
  local layer = make(2, core.nn_max_pool2d, k[1], k[2], p.stride[1], p.stride[2], p.pad[1],
                     p.pad[2], p.ceil or false, p.name)
  return layer
end

function nn.AvgPool2d(kernel, opts)
  local k, p = pool_options('nn.AvgPool2d', kernel, opts, {count_include_pad = o.boolean})
  local include_pad = p.count_include_pad == nil or p.count_include_pad
  local layer = make(2, core.nn_avg_pool2d, k[1], k[2], p.stride[1], p.stride[2], p.pad[1],
                     p.pad[2], p.ceil or false, include_pad, p.name)
  return layer
end

function nn.GlobalAvgPool2d(opts)
  opts = o.check('nn.GlobalAvgPool2d', opts, {name = o.name})
  local layer = make(2, core.nn_global_avg_pool2d, opts.name)
  return layer
end

function nn.LRN(opts)
  opts = o.check('nn.LRN', opts, {size = o.positive_int, alpha = o.number, beta = o.number,
                                  k = o.number, name = o.name})
  local layer = make(2, core.nn_lrn, opts.size or 5, opts.alpha or 1e-4, opts.beta or 0.75,
                     opts.k or 1, opts.name)
  return layer
end

function nn.Linear(in_features, out_features, opts)
  local fn = 'nn.Linear'
  o.arg(fn, 1, 'in_features', in_features, o.positive_int)
  o.arg(fn, 2, 'out_features', out_features, o.positive_int)
  opts = o.check(fn, opts, {bias = o.boolean, init = o.string, name = o.name})
  local bias = opts.bias == nil or opts.bias
  local layer = make(2, core.nn_linear, in_features, out_features, bias, opts.init or 'kaiming',
                     opts.name)
  return layer
end

function nn.Dropout(p, opts)
  if p == nil then p = 0.5 end
  o.arg('nn.Dropout', 1, 'p', p, o.fraction(0, 1))
  opts = o.check('nn.Dropout', opts, {name = o.name})
  local layer = make(2, core.nn_dropout, p, opts.name)
  return layer
end

function nn.Flatten(opts)
  opts = o.check('nn.Flatten', opts, {name = o.name})
  local layer = make(2, core.nn_flatten, opts.name)
  return layer
end

-- Adds the list part of `spec` (layers) to `seq`; `fn` names the caller in messages.
local function add_layers(fn, seq, spec, level)
  local n = 0
  for k in pairs(spec) do
    if type(k) == 'number' then n = math.max(n, k) end
  end
  for i = 1, n do
    local layer = spec[i]
    if not is_layer(layer) then
      local hint = type(layer) == 'function' and ' (a constructor: call it, e.g. nn.ReLU())' or ''
      error(('%s: entry %d is %s, expected a layer%s')
            :format(fn, i, o.describe(layer), hint), level)
    end
    local ok, err = pcall(seq.add, seq, layer)
    if not ok then error(err, level) end
  end
  return seq
end

-- nn.Sequential{layer, layer, ..., name = 'net'}: the layers applied in order.
function nn.Sequential(spec)
  spec = spec or {}
  if type(spec) ~= 'table' or getmetatable(spec) ~= nil then
    error(("bad argument #1 to 'nn.Sequential' (list of layers expected, got %s)")
          :format(o.describe(spec)), 2)
  end
  local name
  for k, v in pairs(spec) do
    if k == 'name' then
      name = o.arg('nn.Sequential', 1, 'name', v, o.name)
    elseif type(k) ~= 'number' then
      error(("nn.Sequential: unknown option '%s' (known: name; layers go in the list part)")
            :format(tostring(k)), 2)
    end
  end
  return add_layers('nn.Sequential', core.nn_sequential(name), spec, 3)
end

-- A branch of a Residual: a Sequential, or a list of layers to make one of.
local function branch(fn, what, value)
  if is_layer(value) then
    if value:kind() ~= 'Sequential' then
      error(('%s: %s must be a Sequential or a list of layers, got a %s layer')
            :format(fn, what, value:kind()), 3)
    end
    return value
  end
  if type(value) ~= 'table' or getmetatable(value) ~= nil then
    error(('%s: %s must be a Sequential or a list of layers, got %s')
          :format(fn, what, o.describe(value)), 3)
  end
  return add_layers(fn .. ' ' .. what, core.nn_sequential(), value, 4)
end

-- nn.Residual{body = {layers} or Sequential, shortcut = {layers} or Sequential or nil}:
-- y = body(x) + shortcut(x), the shortcut being the identity when absent.
function nn.Residual(spec)
  local fn = 'nn.Residual'
  if type(spec) ~= 'table' or getmetatable(spec) ~= nil then
    error(("bad argument #1 to 'nn.Residual' (table {body = ..., shortcut = ...} expected, got %s)")
          :format(o.describe(spec)), 2)
  end
  for k in pairs(spec) do
    if k ~= 'body' and k ~= 'shortcut' and k ~= 'name' then
      error(("%s: unknown option '%s' (known: body, name, shortcut)"):format(fn, tostring(k)), 2)
    end
  end
  if spec.body == nil then error(fn .. ': the body is missing (body = {layers...})', 2) end
  if spec.name ~= nil then o.arg(fn, 1, 'name', spec.name, o.name) end
  local body = branch(fn, 'body', spec.body)
  local shortcut = spec.shortcut ~= nil and branch(fn, 'shortcut', spec.shortcut) or nil
  local layer = make(2, core.nn_residual, body, shortcut, spec.name)
  return layer
end

-- nn.LSTM(input_size, hidden_size [, {layers = 1, bias = true, output = 'sequence', name =}])
-- and nn.GRU(...): PyTorch's LSTM and GRU with batch_first, on N x steps x input_size.
-- output = 'sequence' gives N x steps x hidden_size, 'last' the last step's N x hidden_size.
-- In a graph, initial states come as more inputs (the LSTM's h0 and c0, the GRU's h0), each
-- N x layers x hidden_size.
local function recurrent(kind, cell)
  return function(input_size, hidden_size, opts)
    local fn = 'nn.' .. kind
    o.arg(fn, 1, 'input_size', input_size, o.positive_int)
    o.arg(fn, 2, 'hidden_size', hidden_size, o.positive_int)
    opts = o.check(fn, opts, {layers = o.positive_int, bias = o.boolean,
                              output = o.one_of{'sequence', 'last'}, name = o.name})
    local bias = opts.bias == nil or opts.bias
    return make(2, core.nn_recurrent, cell, input_size, hidden_size, opts.layers or 1, bias,
                opts.output == 'last', opts.name)
  end
end
nn.LSTM = recurrent('LSTM', 'lstm')
nn.GRU = recurrent('GRU', 'gru')

-- Attention, as nodes of a graph: g:add(attention, q, k, v), or g:add(attention, q, kv) where
-- the second input is both the keys and the values. Inputs batch first: q N x Tq x d,
-- k N x Tk x d (the additive layer: key_size), v N x Tk x dv; output N x Tq x dv.
-- nn.ScaledDotProductAttention([{scale = 1/sqrt(d), causal = false, name =}]):
-- softmax(q k^T * scale) v, PyTorch's scaled_dot_product_attention; causal hides keys after
-- the query. No parameters.
function nn.ScaledDotProductAttention(opts)
  opts = o.check('nn.ScaledDotProductAttention', opts,
                 {scale = o.positive_number, causal = o.boolean, name = o.name})
  return make(2, core.nn_scaled_dot_product_attention, opts.scale, opts.causal == true, opts.name)
end

-- nn.AdditiveAttention(query_size, key_size, hidden_size [, {bias = true, name =}]): Bahdanau's
-- score v . tanh(Wq q_i + Wk k_j + b), softmax over the keys j, weighted sum of the values.
-- Parameters query_weight, key_weight, bias, score_weight.
function nn.AdditiveAttention(query_size, key_size, hidden_size, opts)
  local fn = 'nn.AdditiveAttention'
  o.arg(fn, 1, 'query_size', query_size, o.positive_int)
  o.arg(fn, 2, 'key_size', key_size, o.positive_int)
  o.arg(fn, 3, 'hidden_size', hidden_size, o.positive_int)
  opts = o.check(fn, opts, {bias = o.boolean, name = o.name})
  return make(2, core.nn_additive_attention, query_size, key_size, hidden_size, opts.bias ~= false,
              opts.name)
end

-- attention:attention_weights(): a host Tensor N x Tq x Tk, the weights of the layer's last
-- forward (training or evaluation; with micro-batches the last one's), each row summing to 1.
local attention_kinds = {ScaledDotProductAttention = true, AdditiveAttention = true}
function layer_mt.__index.attention_weights(self)
  if not is_layer(self) or not attention_kinds[self:kind()] then
    local what = is_layer(self) and ('a ' .. self:kind() .. ' layer') or o.describe(self)
    error(("bad self to 'attention_weights' (an attention layer expected, got %s)"):format(what), 2)
  end
  local ok, result = pcall(core.nn_attention_weights, self)
  if not ok then error(result, 2) end
  return result
end

-- The joins and slices of graphs (lua/tandem/graph.lua). Dimensions count from 1 as in
-- Torch, the batch being dimension 1: 2 is channels of images or features of vectors.
local function dimension(fn, index, value)
  local d = o.arg(fn, index, 'dim', value, o.positive_int, 4)
  if d == 1 then
    error(("bad argument #%d to '%s' (dimension 1 is the batch, which micro-batches cut; "
           .. "2 is channels or features)"):format(index, fn), 3)
  end
  return d
end

-- Splits (value, opts) where value may also be given as opts[key] (nn.Concat(3) or nn.Concat{dim = 3}).
local function positional_or_option(fn, value, opts, key, spec)
  if type(value) == 'table' and getmetatable(value) == nil and opts == nil then value, opts = nil, value end
  opts = o.check(fn, opts, spec, 4)
  if value ~= nil and opts[key] ~= nil then
    error(('%s: %s given twice (as argument #1 and as an option)'):format(fn, key), 3)
  end
  if value == nil then value = opts[key] end
  return value, opts
end

-- nn.Concat([dim = 2] [, {name =}]): joins a graph node's inputs along `dim`.
function nn.Concat(dim, opts)
  local fn = 'nn.Concat'
  dim, opts = positional_or_option(fn, dim, opts, 'dim', {dim = o.positive_int, name = o.name})
  dim = dimension(fn, 1, dim or 2)
  return make(2, core.nn_concat, dim - 1, opts.name)
end

-- nn.Add(), nn.Mul(): the sum of a graph node's inputs, and the product of its two.
function nn.Add(opts)
  opts = o.check('nn.Add', opts, {name = o.name})
  return make(2, core.nn_add, opts.name)
end

-- nn.AddLoss(loss [, {weight = 1, name =}]): a graph node of three inputs (x, output, target)
-- that passes x on and adds weight x loss(output, target) to the objective (layers/add_loss.h).
function nn.AddLoss(loss, opts)
  local fn = 'nn.AddLoss'
  opts = o.check(fn, opts, {weight = o.finite_number, name = o.name})
  if getmetatable(loss) ~= getmetatable(nn.MSE()) then  -- every loss shares the Loss type
    error(('%s: argument #1 must be a loss (nn.MSE(), nn.BCEWithLogits()), got %s'):format(fn, o.describe(loss)), 2)
  end
  return make(2, core.nn_add_loss, loss, opts.weight or 1, opts.name)
end

function nn.Mul(opts)
  opts = o.check('nn.Mul', opts, {name = o.name})
  return make(2, core.nn_mul, opts.name)
end

-- nn.Narrow(dim, start, length [, {name =}]): indices start .. start + length - 1 of `dim`.
function nn.Narrow(dim, start, length, opts)
  local fn = 'nn.Narrow'
  dim = dimension(fn, 1, dim)
  o.arg(fn, 2, 'start', start, o.positive_int)
  o.arg(fn, 3, 'length', length, o.positive_int)
  opts = o.check(fn, opts, {name = o.name})
  return make(2, core.nn_narrow, dim - 1, start - 1, length, opts.name)
end

-- nn.Reshape(28, 28) or nn.Reshape({28, 28} [, {name =}]): each sample to that shape (the
-- batch stays first); one size may be -1, worked out from the others.
function nn.Reshape(...)
  local fn = 'nn.Reshape'
  local args, sizes, opts = {...}, {}, nil
  if type(args[1]) == 'table' then
    sizes, opts = args[1], args[2]
    if select('#', ...) > 2 then error(fn .. ': give the sizes as numbers or as one list, then options', 2) end
  else
    for i = 1, select('#', ...) do
      local v = args[i]
      if type(v) == 'table' and i == select('#', ...) then opts = v else sizes[#sizes + 1] = v end
    end
  end
  if #sizes == 0 then error(fn .. ': the sizes of a sample are missing, e.g. nn.Reshape(28, 28)', 2) end
  for i, v in ipairs(sizes) do
    if v ~= -1 then o.arg(fn, i, 'size', v, o.positive_int) end
  end
  opts = o.check(fn, opts, {name = o.name})
  return make(2, core.nn_reshape, sizes, opts.name)
end

-- nn.Graph([{name =}]), or a whole graph at once, nodes in any order:
--   nn.Graph{inputs = {'x'}, {nn.Linear(4, 8, {name = 'h'}), 'x'}, {nn.ReLU{name = 'r'}, 'h'},
--            outputs = {'r'}, name = 'g'}
-- Each node is {layer, input names...}; a layer other nodes name must be named.
function nn.Graph(spec)
  local fn = 'nn.Graph'
  if spec == nil then return core.nn_graph() end
  if type(spec) ~= 'table' or getmetatable(spec) ~= nil then
    error(("bad argument #1 to '%s' (table expected, got %s)"):format(fn, o.describe(spec)), 2)
  end
  local name, inputs, outputs
  for k, v in pairs(spec) do
    if k == 'name' then name = o.arg(fn, 1, 'name', v, o.name)
    elseif k == 'inputs' or k == 'outputs' then
      if type(v) ~= 'table' then error(('%s: %s must be a list of names, got %s'):format(fn, k, o.describe(v)), 2) end
      for i, n in ipairs(v) do
        if type(n) ~= 'string' then error(('%s: %s[%d] must be a name, got %s'):format(fn, k, i, o.describe(n)), 2) end
      end
      if k == 'inputs' then inputs = v else outputs = v end
    elseif type(k) ~= 'number' then
      error(("%s: unknown option '%s' (known: inputs, name, outputs; nodes go in the list part)")
            :format(fn, tostring(k)), 2)
    end
  end
  if #spec == 0 and inputs == nil and outputs == nil then return make(2, core.nn_graph, name) end
  if inputs == nil or outputs == nil then
    error(fn .. ': a graph given whole needs inputs = {...} and outputs = {...} besides its nodes', 2)
  end
  local nodes = {}
  for i, node in ipairs(spec) do
    if type(node) ~= 'table' or getmetatable(node) ~= nil or not is_layer(node[1]) then
      error(('%s: node %d must be {layer, input names...}, got %s'):format(fn, i, o.describe(node)), 2)
    end
    local feeds = {}
    for j = 2, #node do
      if type(node[j]) ~= 'string' then
        error(('%s: node %d: input %d must be a name, got %s'):format(fn, i, j - 1, o.describe(node[j])), 2)
      end
      feeds[#feeds + 1] = node[j]
    end
    nodes[i] = {node[1], feeds}
  end
  return make(2, core.graph_build, inputs, nodes, outputs, name)
end

-- nn.Lua{forward =, backward = [, parameters = {name = tensor}, output_shape =, name =]}: a
-- layer written in Lua (lua/lua_layer.h), over Lua's tensor math:
--   forward(p, x) -> y [, saved]         p: the parameters by name; saved: a list of tensors
--   backward(p, x, dy, saved) -> dx [, grads]   grads: name -> dL/dparameter (added in)
--   output_shape(shape) -> shape          whole shapes, batch first (the input's without it)
-- Inside T.Engine it runs on the stage's worker thread, one Lua call at a time (the recipe's
-- thread lends the Lua state while it waits for a step); CPU devices only.
function nn.Lua(spec)
  local fn = 'nn.Lua'
  if type(spec) ~= 'table' or getmetatable(spec) ~= nil then
    error(("bad argument #1 to '%s' (a table {forward =, backward =, parameters =, output_shape =, name =} "
           .. "expected, got %s)"):format(fn, o.describe(spec)), 2)
  end
  if spec.name ~= nil then o.arg(fn, 1, 'name', spec.name, o.name) end
  return make(2, core.lua_layer, spec)
end

-- nn.Embedding(num_embeddings, embedding_dim [, {name =}]): a table of vectors looked up by
-- index; input N x ... of whole numbers in [0, num_embeddings) (f32, counted from 0 as class
-- labels are), output N x ... x embedding_dim.
function nn.Embedding(count, dim, opts)
  local fn = 'nn.Embedding'
  o.arg(fn, 1, 'num_embeddings', count, o.positive_int)
  o.arg(fn, 2, 'embedding_dim', dim, o.positive_int)
  opts = o.check(fn, opts, {name = o.name})
  return make(2, core.nn_embedding, count, dim, opts.name)
end

-- nn.Softmax([dim = -1] [, {name =}]) and nn.LogSoftmax(...): along `dim`, counted from 1 (the
-- batch, which it cannot be) or from the end when negative (-1: the last).
local function softmax(kind, log)
  return function(dim, opts)
    local fn = 'nn.' .. kind
    dim, opts = positional_or_option(fn, dim, opts, 'dim', {dim = o.number, name = o.name})
    dim = dim or -1
    if dim ~= math.floor(dim) or dim == 0 or dim == 1 then
      error(("bad argument #1 to '%s' (dim must be 2 or more, or negative from the end (-1: the last); "
             .. "dimension 1 is the batch; got %s)"):format(fn, tostring(dim)), 2)
    end
    return make(2, core.nn_softmax, dim > 0 and dim - 1 or dim, log, opts.name)
  end
end
nn.Softmax = softmax('Softmax', false)
nn.LogSoftmax = softmax('LogSoftmax', true)

-- nn.LayerNorm(normalized_shape [, {eps = 1e-5, elementwise_affine = true, name =}]): each
-- sample normalised over its trailing dimensions, which must be normalized_shape (a size or a
-- list of sizes), as PyTorch's.
function nn.LayerNorm(shape, opts)
  local fn = 'nn.LayerNorm'
  if type(shape) == 'number' then shape = {shape} end
  if type(shape) ~= 'table' or #shape == 0 then
    error(("bad argument #1 to '%s' (normalized_shape must be a size or a list of sizes, got %s)")
          :format(fn, o.describe(shape)), 2)
  end
  for i, d in ipairs(shape) do o.arg(fn, 1, ('normalized_shape[%d]'):format(i), d, o.positive_int) end
  opts = o.check(fn, opts, {eps = o.positive_number, elementwise_affine = o.boolean, name = o.name})
  local affine = opts.elementwise_affine == nil or opts.elementwise_affine
  return make(2, core.nn_layer_norm, shape, opts.eps or 1e-5, affine, opts.name)
end

-- nn.CrossEntropy{label_smoothing = 0.1}: softmax cross-entropy, the loss of a classifier.
function nn.CrossEntropy(opts)
  opts = o.check('nn.CrossEntropy', opts, {label_smoothing = o.fraction(0, 1)})
  local loss = make(2, core.nn_cross_entropy, opts.label_smoothing or 0)
  return loss
end

-- nn.MSE(): mean squared error against targets shaped as the output (PyTorch's MSELoss).
function nn.MSE(opts)
  o.check('nn.MSE', opts, {})
  return make(2, core.nn_element_loss, 'mse')
end

-- nn.BCEWithLogits(): binary cross-entropy on logits, targets in [0, 1] shaped as the output
-- (PyTorch's BCEWithLogitsLoss); accuracy counts samples whose every output is on its target's side.
function nn.BCEWithLogits(opts)
  o.check('nn.BCEWithLogits', opts, {})
  return make(2, core.nn_element_loss, 'bce_with_logits')
end

return nn
