-- wrk script for bench/refusal-rate.ts: POSTs one realistic streaming chat request (~1 KB: a
-- system and a user message, stream, max_tokens 256) on every connection, and at the end prints
-- one line `wrk-json {...}` with the totals, the error counts and the latency distribution as
-- quantiles, so runs can be pooled without parsing wrk's human-readable units. Headers given
-- with wrk's -H (e.g. `x-goodput-timeout-ms: 5`) are kept; GOODPUT_WRK_MODEL names the model
-- (default llama-3-8b). By hand:
--   wrk -t2 -c1500 -d15s -s bench/wrk-chat.lua http://127.0.0.1:8080/v1/chat/completions
local system = "You are a senior support engineer for a cloud storage product. Answer in plain " ..
  "English, in short paragraphs, and say when you are unsure instead of guessing. When the user " ..
  "shares a command or a log, point to the exact line that matters and explain why. Never ask " ..
  "for passwords or access keys. If a fix needs a restart or a data migration, say so first."
local user = "Our nightly backup job started failing three days ago. It copies about 40,000 " ..
  "small files from a Linux server to a bucket with the sync command, and the last lines of the " ..
  "log are: 'upload failed: ./invoices/2026/11/inv-88213.pdf An error occurred (SlowDown) when " ..
  "calling the PutObject operation (reached max retries: 4): Please reduce your request rate.' " ..
  "Nothing changed on our side as far as I know, but the number of files has roughly doubled " ..
  "since the summer. The job runs at 02:00 with default settings. What is going on, and what " ..
  "should we change so that it finishes reliably before 06:00? Please keep it short."
local model = os.getenv("GOODPUT_WRK_MODEL") or "llama-3-8b"
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"' .. model .. '","messages":[{"role":"system","content":"' .. system ..
  '"},{"role":"user","content":"' .. user .. '"}],"stream":true,"max_tokens":256,"temperature":0.7}'

-- With GOODPUT_WRK_OUTCOMES set, each response is also judged as the client sees it (which makes
-- wrk slower: every body passes through Lua): a 200 is `completed` when its stream ends with
-- [DONE] and carries no error event, else `cut`; 429/503 are `refused`; the rest `other`. The
-- counts, summed over wrk's threads, join the final line as "outcomes".
local threads = {}
function setup(thread)
  threads[#threads + 1] = thread
end
local outcomes = os.getenv("GOODPUT_WRK_OUTCOMES") ~= nil
if outcomes then
  completed, cut, refused, other = 0, 0, 0, 0
  function response(status, headers, body)
    if status == 200 then
      if body:find("data: [DONE]", 1, true) and not body:find('"error"', 1, true) then
        completed = completed + 1
      else
        cut = cut + 1
      end
    elseif status == 429 or status == 503 then
      refused = refused + 1
    else
      other = other + 1
    end
  end
end

local function outcomesJson()
  if not outcomes then return "" end
  local sum = { completed = 0, cut = 0, refused = 0, other = 0 }
  for _, t in ipairs(threads) do
    for k, _ in pairs(sum) do sum[k] = sum[k] + (t:get(k) or 0) end
  end
  return string.format(',"outcomes":{"completed":%d,"cut":%d,"refused":%d,"other":%d}',
    sum.completed, sum.cut, sum.refused, sum.other)
end

-- The latency distribution as quantile points, each standing for the mass below it down to the
-- previous point: 1% steps to p99, 0.1% steps to p99.9, 0.01% steps to the maximum. Rounds are
-- pooled as the mixture of these points weighted by their requests (bench/wrk-run.ts). Values
-- are microseconds. (wrk's percentile(100) is 0, hence latency.max for the last point.)
done = function(summary, latency, requests)
  local q = {}
  local function add(p, mass, us)
    q[#q + 1] = string.format("[%.2f,%.2f,%d]", p, mass, us or latency:percentile(p))
  end
  for i = 1, 99 do add(i, 1) end
  for i = 1, 9 do add(99 + i * 0.1, 0.1) end
  for i = 1, 9 do add(99.9 + i * 0.01, 0.01) end
  add(100, 0.01, latency.max)
  local e = summary.errors
  io.write(string.format(
    'wrk-json {"duration_us":%d,"requests":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,' ..
      '"write":%d,"status":%d,"timeout":%d},"latency":{"min":%d,"max":%d,"mean":%.1f,"q":[%s]}%s}\n',
    summary.duration, summary.requests, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, latency.min, latency.max, latency.mean, table.concat(q, ","), outcomesJson()))
end
