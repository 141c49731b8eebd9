-- wrk's check that every reply is 200 with the bytes of a file nginx
-- serves: the file named after wrk's "--" (e.g. -- /usr/share/nginx/html/64k.bin),
-- else 1k.bin (apps/smoke.sh, tools/wiretest.sh, bench/apps -mode wire).
-- wrk calls init() and response() in each thread's Lua state; done() runs
-- in the main state and reads each thread's counters with get().
local want
good, bad = 0, 0
function init(args)
  local f = assert(io.open(args[1] or "/usr/share/nginx/html/1k.bin", "rb"))
  want = f:read("*a")
  f:close()
end
function response(status, headers, body)
  if status == 200 and body == want then good = good + 1 else bad = bad + 1 end
end
local threads = {}
function setup(thread) table.insert(threads, thread) end
function done(summary, latency, requests)
  local g, b = 0, 0
  for _, t in ipairs(threads) do g = g + t:get("good"); b = b + t:get("bad") end
  io.write(string.format("wrk-verify good=%d bad=%d\n", g, b))
end
