-- A progress bar for training loops: step, bar, the running metrics given, images/s and ETA.
-- On a terminal it redraws one line; otherwise (logs, CI) it prints a line every 10%.
--   local bar = T.Progress{total = 468, title = 'epoch 1/10'}
--   bar:update(step, {loss = 0.41, acc = 0.86}, images_this_step [, data_wait])
-- data_wait, when given, is the fraction of step time spent waiting for data ("| data 0.4%").
--   bar:finish()
local core = require 'tandem.core'
local check = require 'tandem.options'

local Progress = {}
Progress.__index = Progress

local function is_terminal()
  return core.stdout_is_terminal()
end

local function format_time(seconds)
  seconds = math.max(0, math.floor(seconds + 0.5))
  if seconds >= 3600 then
    return ('%d:%02d:%02d'):format(seconds / 3600, (seconds % 3600) / 60, seconds % 60)
  end
  return ('%d:%02d'):format(seconds / 60, seconds % 60)
end

local function format_value(v)
  if type(v) ~= 'number' then return tostring(v) end
  if v ~= 0 and (math.abs(v) < 1e-3 or math.abs(v) >= 1e5) then return ('%.3g'):format(v) end
  return ('%.4f'):format(v)
end

function Progress.new(options)
  options = check.check('T.Progress', options or {}, {total = check.positive_number, title = check.string,
                                                      width = check.positive_int, terminal = check.boolean})
  if options.total == nil then error('T.Progress: option total is required (the number of steps)', 2) end
  local self = setmetatable({}, Progress)
  self.total = options.total
  self.title = options.title or ''
  self.width = options.width or 24
  self.terminal = options.terminal
  if self.terminal == nil then self.terminal = is_terminal() end
  self.start = core.now()
  self.images = 0
  self.step = 0
  self.next_report = 0.1
  self.line = ''
  return self
end

-- Records progress up to `step` (1-based) with the given metrics and images done this step.
function Progress:update(step, metrics, images, data_wait)
  self.step = step
  self.images = self.images + (images or 0)
  local keys = {}
  for k in pairs(metrics or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = k .. ' ' .. format_value(metrics[k]) end
  local fraction = math.min(1, step / self.total)
  local filled = math.floor(fraction * self.width + 0.5)
  local elapsed = self:elapsed()
  local eta = fraction > 0 and elapsed * (1 - fraction) / fraction or 0
  local data = data_wait and (' | data %.1f%%'):format(100 * data_wait) or ''
  self.line = ('%s [%s%s] %d/%d %s | %.0f img/s%s | %s<%s'):format(
    self.title, ('#'):rep(filled), ('.'):rep(self.width - filled), step, self.total,
    table.concat(parts, ' '), self:rate(), data, format_time(elapsed), format_time(eta))
  if self.terminal then
    io.stdout:write('\r', self.line, '\027[K')
    io.stdout:flush()
  elseif fraction >= self.next_report then
    print(self.line)
    while self.next_report <= fraction do self.next_report = self.next_report + 0.1 end
  end
end

function Progress:finish()
  if self.terminal then io.stdout:write('\n') io.stdout:flush() end
end

-- Seconds since the bar was made.
function Progress:elapsed() return core.now() - self.start end

-- Images per second since the bar was made.
function Progress:rate()
  local t = self:elapsed()
  return t > 0 and self.images / t or 0
end

return setmetatable(Progress, {__call = function(_, options) return Progress.new(options) end})
