-- Where Tandem's own files are: its recipes folder (nets, topologies, data sets) beside lua/ in
-- the source tree, or share/tandem/recipes installed, found from this file's place.
local M = {}

function M.recipes_dir()
  local here = debug.getinfo(1, 'S').source:gsub('^@', '')
  return (here:gsub('/lua/tandem/paths%.lua$', '')) .. '/recipes'
end

local function exists(path)
  local f = io.open(path, 'rb')
  if f then f:close() end
  return f ~= nil
end

-- T.recipe_path('nets/lenet5.lua'): the file beside the running recipe when it is there (a
-- recipe's own nets), else Tandem's (so a recipe copied out of recipes/ still finds nets/).
function M.recipe_path(relative)
  local host = package.loaded['tandem.host']
  local beside = host and host.recipe_dir and (host.recipe_dir .. '/' .. relative)
  if beside and exists(beside) then return beside end
  local own = M.recipes_dir() .. '/' .. relative
  if exists(own) then return own end
  error(("no file %s beside the recipe%s or in Tandem's recipes (%s)")
        :format(relative, beside and (' (' .. beside .. ')') or '', own), 2)
end

return M
