-- The methods of graphs (nn.Graph), over core.graph_* (lua/bind_graph.cpp):
--   local g = nn.Graph{name = 'block'}
--   local x = g:input('x')                        -- 'x'
--   local a = g:add(nn.Conv2d(8, 4, 1), x)        -- the node's name: 'conv1'
--   local b = g:add(nn.Conv2d(8, 4, 3, {pad = 1}), x)
--   g:output(g:add(nn.Concat(), a, b))
-- Layers have one metatable, so these methods are on every layer and check that they are
-- given a graph. g:add(layer, inputs...) and g:forward{x1, x2, ...} are the layer methods add
-- and forward, which hand a graph to lua/bind_graph.cpp.
local core = require 'tandem.core'
local o = require 'tandem.options'

local M = {}

local function check_graph(self, method)
  if getmetatable(self) ~= core.metatables.Layer or self:kind() ~= 'Graph' then
    local what = getmetatable(self) == core.metatables.Layer and ('a ' .. self:kind() .. ' layer') or o.describe(self)
    error(("bad self to '%s' (a Graph expected, got %s)"):format(method, what), 3)
  end
end

-- Calls core function f, raising its error at the caller of the method (methods keep the
-- result in a local before returning it: a tail call would drop their own level).
local function call(f, ...)
  local ok, result = pcall(f, ...)
  if not ok then error(result, 3) end
  return result
end

-- The names in a method's arguments: strings, each a node or an input of the graph.
local function names(method, first, ...)
  local list = {}
  for i = 1, select('#', ...) do
    local v = select(i, ...)
    if type(v) ~= 'string' then
      error(("bad argument #%d to '%s' (a node's name expected, got %s)")
            :format(first + i - 1, method, o.describe(v)), 3)
    end
    list[i] = v
  end
  return list
end

function M.install(mt)
  local methods = mt.__index

  -- g:input(name): declares an input; returns its name.
  function methods.input(self, name)
    check_graph(self, 'input')
    o.arg('input', 1, 'name', name, o.name)
    local result = call(core.graph_input, self, name)
    return result
  end

  -- g:output(names...): the values the graph returns, in order.
  function methods.output(self, ...)
    check_graph(self, 'output')
    call(core.graph_output, self, names('output', 1, ...))
    return self
  end

  -- g:split(input, {sizes}, [{dim = 2}]): Narrow nodes cutting `input` into consecutive parts
  -- of those sizes along dim; returns their names.
  function methods.split(self, input, sizes, opts)
    check_graph(self, 'split')
    names('split', 1, input)
    if type(sizes) ~= 'table' or #sizes == 0 then
      error(("bad argument #2 to 'split' (a list of sizes expected, got %s)"):format(o.describe(sizes)), 2)
    end
    opts = o.check('split', opts, {dim = o.positive_int})
    local nn = require 'tandem.nn'
    local parts, start = {}, 1
    for i, size in ipairs(sizes) do
      o.arg('split', 2, ('size %d'):format(i), size, o.positive_int)
      local ok, narrow = pcall(nn.Narrow, opts.dim or 2, start, size)
      if not ok then error(narrow, 2) end
      parts[i] = call(self.add, self, narrow, input)
      start = start + size
    end
    return unpack(parts)
  end

  -- g:nodes(): {{name =, kind =, inputs = {names}}, ...} in the order they run.
  function methods.nodes(self)
    check_graph(self, 'nodes')
    return core.graph_info(self).nodes
  end

  -- g:inputs(), g:outputs(): the names.
  function methods.inputs(self)
    check_graph(self, 'inputs')
    return core.graph_info(self).inputs
  end

  function methods.outputs(self)
    check_graph(self, 'outputs')
    return core.graph_info(self).outputs
  end

end

return M
