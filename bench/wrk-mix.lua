-- wrk script for the benchmark mix (bench/load.ts writes the pool and runs wrk).
--
--   wrk -s bench/wrk-mix.lua URL -- POOL_PREFIX [PER_THREAD_RATE]
--
-- Thread i sends the requests of POOL_PREFIX-i.http in order, each a whole HTTP request ended
-- by a NUL, so no two threads send the same body. With PER_THREAD_RATE, each thread paces its
-- requests to that many per second (the soak). done() prints one JSON line: throughput,
-- latency percentiles, responses by status, socket errors.

local threads = {}

function setup(thread)
  thread:set("thread_index", #threads)
  table.insert(threads, thread)
end

-- Per thread (each has its own Lua state): the pool as one string, read whole in init() and cut
-- request by request in request(), so that init() stays short: wrk starts each thread's load as
-- soon as its init() returns, but its clock only once the last thread's init() has returned.
local pool, pos = nil, 1
statuses = {}

function init(args)
  local file = assert(io.open(args[1] .. "-" .. thread_index .. ".http", "rb"))
  pool = file:read("*a")
  file:close()
  assert(#pool > 0, "empty request pool")

  local rate = tonumber(args[2] or "")
  if rate and rate > 0 then
    local ffi = require("ffi")
    ffi.cdef("typedef struct { long tv_sec; long tv_nsec; } bench_timespec; int clock_gettime(int, bench_timespec *);")
    local now = ffi.new("bench_timespec")
    local function now_ms()
      ffi.C.clock_gettime(1, now) -- CLOCK_MONOTONIC
      return tonumber(now.tv_sec) * 1000 + tonumber(now.tv_nsec) / 1e6
    end
    local interval = 1000 / rate
    local next_at = 0
    -- Defined only when pacing: wrk checks for delay() after init, and calling it costs a timer
    -- per request. Each request takes the thread's next free slot, whichever connection sends it.
    delay = function()
      local t = now_ms()
      next_at = math.max(next_at + interval, t)
      return math.floor(next_at - t)
    end
  end
end

function request()
  if pos > #pool then
    pos = 1
    pool_wrapped = true
  end
  local stop = pool:find("\0", pos, true)
  local start = pos
  pos = stop + 1
  return pool:sub(start, stop - 1)
end

function response(status)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency)
  local counts, wrapped = {}, false
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("statuses")) do
      counts[status] = (counts[status] or 0) + n
    end
    wrapped = wrapped or thread:get("pool_wrapped") == true
  end
  local parts = {}
  for status, n in pairs(counts) do
    parts[#parts + 1] = string.format('"%d":%d', status, n)
  end
  local e = summary.errors
  io.write(string.format(
    '\n{"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"statuses":{%s},"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d},' ..
    '"pool_wrapped":%s}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, table.concat(parts, ","),
    e.connect, e.read, e.write, e.timeout, e.status, tostring(wrapped)))
end
