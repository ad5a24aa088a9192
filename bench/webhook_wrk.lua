-- wrk script for bench/webhook_wrk.py: replays pre-signed raw requests, each once.
-- args: <requests file (NUL-separated)> <number of wrk threads>
local threads_made = 0

function setup(thread)
  thread:set("idx", threads_made)
  threads_made = threads_made + 1
end

function init(args)
  local f = assert(io.open(args[1], "rb"))
  local data = f:read("*a")
  f:close()
  local nthreads = tonumber(args[2])
  reqs, total, pos, k = {}, 0, 0, 0
  for r in string.gmatch(data, "([^%z]+)") do
    if k % nthreads == idx then
      total = total + 1
      reqs[total] = r
    end
    k = k + 1
  end
end

-- Wraps around when the file runs out: the Python side counts duplicates and says so.
function request()
  pos = pos % total + 1
  return reqs[pos]
end

function done(summary, latency, requests)
  io.write(string.format("WRK %d %d %d %.0f %.0f %.0f\n",
    summary.requests, summary.duration,
    summary.errors.status + summary.errors.connect + summary.errors.read
      + summary.errors.write + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
