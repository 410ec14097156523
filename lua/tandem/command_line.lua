-- Command-line options, declared once. A recipe or a command lists its options, each with a
-- default and a line of help; from that one table come the parsing of its command line
-- (--name=value, --name value, --flag), the checks (a message names the option, the value and
-- the default), and its --help text. `T.options` is `options` below.
--
--   local opt = T.options(..., {
--     epochs = {10, 'passes over the training set', kind = 'positive_int'},
--     lr     = {0.1, 'the peak learning rate', kind = 'positive_number'},
--     layout = {'auto', 'the activation layout', choices = {'auto', 'contiguous', 'channels_last'}},
--     fast   = false,         -- a bare default: its type is its rule, and it has no help line
--   })
--
-- Kinds (`kind =`; without one, the default's type decides: number, string or boolean): int,
-- positive_int, nonneg_int, number, positive_number, nonneg_number, fraction ([0, 1)), boolean,
-- string, dir and file (a path that must exist when given; '' for none), size ('512MB'; '' for
-- none). `choices` lists the values a string (or number) may take.
local core = require 'tandem.core'

local M = {}

-- ---- Ending a command early ------------------------------------------------------------------

-- A mistake in a command line (status 2) or a help text (status 0). `tandem` prints the message
-- without a Lua traceback and exits with the status (tools/tandem/lua_state.cpp reads the
-- fields `status` and `message`); inside Lua it reads as its message (tostring, pcall).
local Exit = {__name = 'tandem.exit'}
Exit.__tostring = function(e) return e.message end

function M.usage_error(message) error(setmetatable({message = message, status = 2}, Exit), 0) end
local function show_help(text) error(setmetatable({message = text, status = 0}, Exit), 0) end

-- ---- Kinds of value --------------------------------------------------------------------------

local function finite(v) return type(v) == 'number' and v == v and v > -math.huge and v < math.huge end
local function whole(v) return finite(v) and v == math.floor(v) and math.abs(v) < 2^53 end

-- What a path names: 'directory', 'file' or nil (io.open opens a directory; reading it fails
-- with EISDIR, 21).
local function path_type(path)
  local f = io.open(path, 'rb')
  if not f then return nil end
  local _, _, code = f:read(1)
  f:close()
  return code == 21 and 'directory' or 'file'
end

local function size_ok(v)
  if v == '' then return true end
  local ok, bytes = pcall(core.parse_bytes, v)
  return ok and bytes > 0
end

-- Each kind: the Lua type its text converts to, its test, and what it is in a message.
local kinds = {
  int = {'number', whole, 'an integer'},
  positive_int = {'number', function(v) return whole(v) and v >= 1 end, 'a positive integer'},
  nonneg_int = {'number', function(v) return whole(v) and v >= 0 end, 'a non-negative integer'},
  number = {'number', finite, 'a finite number'},
  positive_number = {'number', function(v) return finite(v) and v > 0 end, 'a positive number'},
  nonneg_number = {'number', function(v) return finite(v) and v >= 0 end, 'a non-negative number'},
  fraction = {'number', function(v) return finite(v) and v >= 0 and v < 1 end, 'a number in [0, 1)'},
  boolean = {'boolean', function() return true end, 'true or false'},
  string = {'string', function() return true end, 'a string'},
  dir = {'string', function(v) return v == '' or path_type(v) == 'directory' end, 'an existing directory'},
  file = {'string', function(v) return v == '' or path_type(v) == 'file' end, 'an existing file'},
  size = {'string', size_ok, "a size such as '512MB' above 0 ('' for none)"},
}

local function kind_names()
  local names = {}
  for name in pairs(kinds) do names[#names + 1] = name end
  table.sort(names)
  return table.concat(names, ', ')
end

local function describe(v)
  if type(v) == 'string' then return ("'%s'"):format(v) end
  return tostring(v)
end

local function quoted_list(choices)
  local parts = {}
  for i, c in ipairs(choices) do parts[i] = describe(c) end
  if #parts == 1 then return parts[1] end
  return table.concat(parts, ', ', 1, #parts - 1) .. ' or ' .. parts[#parts]
end

-- ---- Declarations ----------------------------------------------------------------------------

-- One option's declaration from what a recipe wrote: {default, help, kind =, choices =, group =}
-- or a bare default. Mistakes in it are the recipe author's, so they raise plain errors.
local function declare(name, spec)
  local d
  if type(spec) == 'table' then
    d = {name = name, default = spec[1], help = spec[2] or spec.help, kind = spec.kind,
         choices = spec.choices, group = spec.group}
    for key in pairs(spec) do
      if key ~= 1 and key ~= 2 and key ~= 'help' and key ~= 'kind' and key ~= 'choices' and key ~= 'group' then
        error(("option '%s' is declared with an unknown field '%s' (fields: {default, help, kind =, "
               .. "choices =, group =})"):format(name, tostring(key)), 0)
      end
    end
  else
    d = {name = name, default = spec}
  end
  local default_type = type(d.default)
  if default_type ~= 'number' and default_type ~= 'string' and default_type ~= 'boolean' then
    error(("option '%s' needs a default (a number, string or boolean), got %s"):format(name, default_type), 0)
  end
  d.kind = d.kind or default_type
  local kind = kinds[d.kind]
  if not kind then
    error(("option '%s' has an unknown kind '%s' (kinds: %s)"):format(name, tostring(d.kind), kind_names()), 0)
  end
  d.type, d.test, d.expected = kind[1], kind[2], kind[3]
  -- A default of a path kind need not exist until the option is used: only its type is checked.
  local default_ok = d.type == default_type and (d.kind == 'dir' or d.kind == 'file' or d.test(d.default))
  if not default_ok then
    error(("option '%s' of kind %s has the default %s, which is not %s")
          :format(name, d.kind, describe(d.default), d.expected), 0)
  end
  if d.choices ~= nil and (type(d.choices) ~= 'table' or #d.choices == 0) then
    error(("option '%s': choices must be a non-empty list"):format(name), 0)
  end
  return d
end

-- Every option's declaration, by name (dashes in names read as underscores).
function M.declarations(specs)
  local decls = {}
  for name, spec in pairs(specs) do
    if type(name) ~= 'string' then
      error(('options are declared by name, got the key %s'):format(describe(name)), 0)
    end
    decls[name] = declare(name, spec)
  end
  return decls
end

-- `specs` with `overrides` over them: a bare value over a declared option becomes its new
-- default and keeps its help and kind; a declaration replaces it. (T.parallel.defaults and
-- recipes' shared option sets give their own defaults this way.)
function M.override(specs, overrides)
  local all = {}
  for name, spec in pairs(specs) do all[name] = spec end
  for name, value in pairs(overrides) do
    local spec = specs[name]
    if type(spec) == 'table' and type(value) ~= 'table' then
      local copy = {}
      for k, v in pairs(spec) do copy[k] = v end
      copy[1] = value
      all[name] = copy
    else
      all[name] = value
    end
  end
  return all
end

-- ---- Values ----------------------------------------------------------------------------------

-- Names within two edits of `name` (the 'did you mean' of a typo).
local function distance(a, b)
  local previous = {}
  for j = 0, #b do previous[j] = j end
  for i = 1, #a do
    local row = {[0] = i}
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      row[j] = math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost)
    end
    previous = row
  end
  return previous[#b]
end

local function unknown_option(name, decls, about)
  local names, close = {}, {}
  for known in pairs(decls) do
    names[#names + 1] = known
    if distance(name, known) <= 2 then close[#close + 1] = '--' .. known end
  end
  table.sort(names)
  table.sort(close)
  local hint = #close > 0 and ('; did you mean %s?'):format(table.concat(close, ' or ')) or ''
  local known = #names <= 12 and (' (known: %s)'):format(table.concat(names, ', '))
                or (' (%s --help lists all %d)'):format(about.usage_name, #names)
  M.usage_error(("%s: unknown option '--%s'%s%s"):format(about.who, name, hint, known))
end

-- `value` (text from a command line, or a Lua value) as option `d` takes it.
local function convert(d, value, about)
  if type(value) == 'string' and d.type == 'number' then
    value = tonumber(value) or value
  elseif type(value) == 'string' and d.type == 'boolean' and (value == 'true' or value == 'false') then
    value = value == 'true'
  elseif type(value) == 'number' and d.type == 'string' then
    value = tostring(value)
  end
  local ok = type(value) == d.type and d.test(value)
  if ok and d.choices then
    ok = false
    for _, c in ipairs(d.choices) do ok = ok or c == value end
  end
  if not ok then
    local expected = d.choices and quoted_list(d.choices) or d.expected
    if d.type == 'number' and type(value) == 'number' and not finite(value) then
      expected = 'a finite number'
    end
    M.usage_error(('%s --%s must be %s, got %s (default %s)')
                  :format(about.who_option, d.name, expected, describe(value), describe(d.default)))
  end
  return value
end

-- ---- Help ------------------------------------------------------------------------------------

-- `text` folded into lines of at most `width` characters.
local function fold(text, width)
  local lines, line = {}, ''
  for word in text:gmatch('%S+') do
    if line ~= '' and #line + 1 + #word > width then
      lines[#lines + 1] = line
      line = word
    else
      line = line == '' and word or (line .. ' ' .. word)
    end
  end
  lines[#lines + 1] = line
  return lines
end

local function option_lines(list)
  table.sort(list, function(a, b) return a.name < b.name end)
  local column = 36
  local lines = {}
  for _, d in ipairs(list) do
    local default = d.default == '' and "''" or tostring(d.default)
    local left = ('  --%s=%s'):format(d.name:gsub('_', '-'), default)
    local help = d.help or ''
    if d.choices then help = help .. (help ~= '' and ' ' or '') .. '(' .. table.concat(d.choices, ', ') .. ')' end
    if help == '' then
      lines[#lines + 1] = left
    else
      if #left > column - 2 then
        lines[#lines + 1] = left
        left = ''
      end
      for i, line in ipairs(fold(help, 100 - column)) do
        lines[#lines + 1] = ('%-' .. column .. 's%s'):format(i == 1 and left or '', line)
      end
    end
  end
  return lines
end

-- The help text: usage, description, then the options (the command's own first, then each group).
function M.help(decls, about)
  local own, groups, group_names = {}, {}, {}
  for _, d in pairs(decls) do
    if d.group then
      if not groups[d.group] then groups[d.group] = {} group_names[#group_names + 1] = d.group end
      table.insert(groups[d.group], d)
    else
      own[#own + 1] = d
    end
  end
  table.sort(group_names)
  local lines = {'usage: ' .. about.usage}
  if about.description and about.description ~= '' then
    lines[#lines + 1] = ''
    lines[#lines + 1] = about.description
  end
  lines[#lines + 1] = ''
  lines[#lines + 1] = 'options (--name=value or --name value; a true/false option alone is true), with their defaults:'
  for _, line in ipairs(option_lines(own)) do lines[#lines + 1] = line end
  for _, group in ipairs(group_names) do
    lines[#lines + 1] = group .. ':'
    for _, line in ipairs(option_lines(groups[group])) do lines[#lines + 1] = line end
  end
  -- What the command knows beyond its options (a function: worked out only when asked for).
  if about.notes then
    lines[#lines + 1] = ''
    lines[#lines + 1] = type(about.notes) == 'function' and about.notes() or about.notes
  end
  return table.concat(lines, '\n')
end

-- ---- Parsing ---------------------------------------------------------------------------------

-- The words of a command line into option values and positional arguments.
local function parse_words(words, decls, about)
  local given, positional = {}, {}
  local i = 1
  while i <= #words do
    local word = words[i]
    if word == '--' then
      for j = i + 1, #words do positional[#positional + 1] = words[j] end
      break
    elseif word == '-h' or word == '--help' then
      show_help(M.help(decls, about))
    elseif word:sub(1, 2) == '--' then
      local name, value = word:sub(3):match('^([^=]*)=(.*)$')
      name = (name or word:sub(3)):gsub('-', '_')
      if name == '' then M.usage_error(("%s: option '%s' has no name"):format(about.who, word)) end
      local d = decls[name]
      if not d then unknown_option(name, decls, about) end
      if value == nil then
        if d.type == 'boolean' then
          value = true
        elseif i < #words and words[i + 1]:sub(1, 2) ~= '--' then
          i = i + 1
          value = words[i]
        else
          M.usage_error(('%s --%s needs a value (--%s=%s or --%s %s)')
                        :format(about.who_option, name, name, tostring(d.default), name, tostring(d.default)))
        end
      end
      given[name] = convert(d, value, about)
    else
      positional[#positional + 1] = word
    end
    i = i + 1
  end
  return given, positional
end

-- The command line `tandem` ran this chunk with: the table it passed (the recipe's `...`) and
-- its words, which tools/tandem/run.cpp leaves in package.loaded['tandem.host'].
local function command_line_words(given)
  local host = package.loaded['tandem.host']
  if host and host.options ~= nil and rawequal(given, host.options) then return host.args end
end

-- The first comment block of a recipe, without its dashes: what its --help says it does.
local function leading_comment(path)
  local f = path and io.open(path, 'r')
  if not f then return nil end
  local lines = {}
  for line in f:lines() do
    local text = line:match('^%-%-%s?(.*)$')
    if not text then break end
    lines[#lines + 1] = text
  end
  f:close()
  return table.concat(lines, '\n')
end

-- The options of a recipe (about: nil) or of a command (about = {usage =, who =, description =,
-- positional = {names}}): `given` (the command line's table, a table of values, or nil) checked
-- against the declarations in `specs` and over their defaults. Positional arguments come back as
-- opt[1], opt[2], ...; a command declares how many it takes (about.positional), a recipe none.
function M.options(given, specs, about)
  if type(specs) ~= 'table' then
    error(("bad argument #2 to 'T.options' (table of option declarations expected, got %s)")
          :format(type(specs)), 2)
  end
  local decls = M.declarations(specs)
  if about == nil then
    local host = package.loaded['tandem.host'] or {}
    local recipe = host.recipe or 'RECIPE'
    about = {usage = ('tandem run %s [--option=value ...]'):format(recipe),
             description = leading_comment(host.recipe), who = recipe:match('[^/]*$'),
             who_option = 'recipe option'}
  end
  about.who = about.who or 'options'
  about.who_option = about.who_option or about.who
  about.usage_name = about.usage_name or about.usage:match('^(.-) %[') or about.usage
  about.positional = about.positional or {}

  local values, positional = {}, {}
  local words = command_line_words(given)
  if words then
    values, positional = parse_words(words, decls, about)
  elseif given ~= nil then
    if type(given) ~= 'table' then
      error(("bad argument #1 to 'T.options' (options table expected, got %s)"):format(type(given)), 2)
    end
    for k, v in pairs(given) do
      if type(k) == 'number' then
        positional[k] = v
      elseif k == 'help' and v == true and not decls.help then
        show_help(M.help(decls, about))
      else
        local d = decls[k]
        if not d then unknown_option(k, decls, about) end
        values[k] = convert(d, v, about)
      end
    end
  end
  if #positional > #about.positional then
    local extra = positional[#about.positional + 1]
    M.usage_error(('%s: unexpected argument %s (options are --name=value; usage: %s)')
                  :format(about.who, describe(extra), about.usage))
  end
  local opt = {}
  for name, d in pairs(decls) do
    if values[name] ~= nil then opt[name] = values[name] else opt[name] = d.default end
  end
  for i, v in ipairs(positional) do opt[i] = v end
  return opt
end

return M
