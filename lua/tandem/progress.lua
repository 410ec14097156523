-- A progress bar for training loops: step, bar, the running metrics given, images/s and ETA.
--   local bar = T.Progress{total = 468, title = 'epoch 1/10', mode = opt.progress}
--   bar:update(step, {loss = 0.41, acc = 0.86}, images_this_step [, data_wait])
-- data_wait, when given, is the fraction of step time spent waiting for data ("| data 0.4%").
-- "| cpu lost 3.0%" is the share of the time the training threads were ready to run that they
-- spent waiting for a core (taken by other processes, or by our own loader threads): what the
-- steps lost that the data wait does not show. It is left out where the kernel does not count it
-- or no training thread has run yet.
--   local epoch = bar:finish()   -- {images_per_s =, seconds =, loss =, acc =, ...}
--
-- Modes: 'bar' redraws one line, 'plain' prints a line every 10%, 'none' prints nothing; 'auto'
-- is 'bar' on a terminal outside an MPI job and 'plain' otherwise (logs, CI, and mpirun, whose
-- ranks all get a pseudo-terminal: a redirected log would be one line of carriage returns).
--
-- In an MPI job every rank trains its share, so the figures shown are the job's: at each line
-- the ranks sum their images and their metrics weighted by their images (every metric is taken
-- as a running mean over the images), and images/s is the whole job's. Every rank must then
-- call update and finish alike, as the training loops do.
local core = require 'tandem.core'
local check = require 'tandem.options'
local stats = require 'tandem.stats'

local Progress = {}
Progress.__index = Progress

-- The modes, and the recipe option every training recipe declares with T.options.
Progress.modes = {'auto', 'bar', 'plain', 'none'}
Progress.option = {'auto', "how progress shows: 'bar' redraws a line, 'plain' prints one every 10%, "
                           .. "'none'; auto: bar on a terminal, plain in logs and under mpirun",
                   choices = Progress.modes}

local function resolve_mode(mode)
  if mode ~= 'auto' then return mode end
  return (core.stdout_is_terminal() and core.mpi.size() == 1) and 'bar' or 'plain'
end

local function in_job() return core.mpi.size() > 1 end

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
                                                      width = check.positive_int, mode = check.one_of(Progress.modes)})
  if options.total == nil then error('T.Progress: option total is required (the number of steps)', 2) end
  local self = setmetatable({}, Progress)
  self.total = options.total
  self.title = options.title or ''
  self.width = options.width or 24
  self.mode = resolve_mode(options.mode or 'auto')
  self.start = core.now()
  self.threads = stats.thread_mark()
  self.images = 0        -- this process's
  self.job_images = 0    -- the job's, as of the last line (this process's outside MPI)
  self.metrics = {}
  self.step = 0
  self.next_report = 0.1
  self.line = ''
  return self
end

-- ' | cpu lost 3.0%' for the progress and epoch lines; '' when unknown.
function Progress.cpu_lost_text(lost)
  return lost and (' | cpu lost %.1f%%'):format(100 * lost) or ''
end

-- The job's images, metrics and share of core time lost: this process's outside MPI; summed over
-- the ranks, metrics weighted by images, inside (a collective: every rank calls it at the same
-- points).
function Progress:job_figures()
  local ran, waited = stats.thread_times_since(self.threads)
  if not in_job() then return self.images, self.metrics, stats.cpu_lost(ran, waited) end
  local keys = {}
  for k, v in pairs(self.metrics) do
    if type(v) == 'number' then keys[#keys + 1] = k end
  end
  table.sort(keys)
  local values = {self.images, ran, waited}
  for i, k in ipairs(keys) do values[i + 3] = self.metrics[k] * self.images end
  local sums = core.mpi.all_reduce(values, 'sum')
  local job = {}
  for k, v in pairs(self.metrics) do job[k] = v end
  for i, k in ipairs(keys) do
    if sums[1] > 0 then job[k] = sums[i + 3] / sums[1] end
  end
  return sums[1], job, stats.cpu_lost(sums[2], sums[3])
end

-- Records progress up to `step` (1-based) with the given metrics and images done this step.
function Progress:update(step, metrics, images, data_wait)
  self.step = step
  self.images = self.images + (images or 0)
  self.metrics = metrics or {}
  local fraction = math.min(1, step / self.total)
  local report = self.mode == 'bar' or (self.mode == 'plain' and fraction >= self.next_report)
  if not report then return end
  while self.next_report <= fraction do self.next_report = self.next_report + 0.1 end
  local job_images, job, lost = self:job_figures()
  self.job_images = job_images
  local keys = {}
  for k in pairs(job) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = k .. ' ' .. format_value(job[k]) end
  local filled = math.floor(fraction * self.width + 0.5)
  local elapsed = self:elapsed()
  local eta = fraction > 0 and elapsed * (1 - fraction) / fraction or 0
  local data = data_wait and (' | data %.1f%%'):format(100 * data_wait) or ''
  local cpu = Progress.cpu_lost_text(lost)
  self.line = ('%s [%s%s] %d/%d %s | %.0f img/s%s%s | %s<%s'):format(
    self.title, ('#'):rep(filled), ('.'):rep(self.width - filled), step, self.total,
    table.concat(parts, ' '), self:rate(), data, cpu, format_time(elapsed), format_time(eta))
  if self.mode == 'bar' then
    io.stdout:write('\r', self.line, '\027[K')
    io.stdout:flush()
  else
    print(self.line)
  end
end

-- Ends the bar and returns the epoch's figures, the job's under MPI: {images_per_s =,
-- seconds =, images =, cpu_lost = (nil where unknown)} and the last metrics given.
function Progress:finish()
  if self.mode == 'bar' then io.stdout:write('\n') io.stdout:flush() end
  local job_images, job, lost = self:job_figures()
  self.job_images = job_images
  local figures = {}
  for k, v in pairs(job) do figures[k] = v end
  figures.images, figures.seconds, figures.images_per_s = job_images, self:elapsed(), self:rate()
  figures.cpu_lost = lost
  return figures
end

-- Seconds since the bar was made.
function Progress:elapsed() return core.now() - self.start end

-- Images per second since the bar was made: the job's as of the last line under MPI.
function Progress:rate()
  local t = self:elapsed()
  local images = in_job() and self.job_images or self.images
  return t > 0 and images / t or 0
end

return setmetatable(Progress, {__call = function(_, options) return Progress.new(options) end})
