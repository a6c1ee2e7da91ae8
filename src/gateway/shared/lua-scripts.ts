/**
 * The Lua scripts that make every shared-state update atomic in Redis (run with EVALSHA, loaded
 * with EVAL when the server does not know them — after a restart, say). Time is the Redis
 * server's (`TIME`), so replicas whose clocks differ still share one bucket. The arithmetic is
 * the policy core's, transcribed: the quota token buckets (capacity = limit, refill = limit per
 * window; an absent bucket is full) and the retry budget (starts at half its capacity, a first
 * attempt deposits `ratio`, a retry withdraws 1, a floor refill per second). Every key written
 * gets a TTL after which its absence reads the same as its value would have.
 */
import { createHash } from 'node:crypto';

export interface LuaScript {
  readonly source: string;
  readonly sha: string;
}

function script(source: string): LuaScript {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

const NOW = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
`;

/**
 * KEYS: token bucket hash, lease sorted set, retry budget hash, request bucket hash. ARGV: lease
 * id, tokens needed, token limit (-1: none), window ms, max concurrent (-1: none), lease TTL ms,
 * attempt, retry ratio, retry capacity, retry floor per second, busy Retry-After ms, retry
 * Retry-After cap ms, retry budget TTL ms, request limit (-1: none). Returns {'ok', 1 | 0 (a
 * lease was taken), tokens left, requests left} or {reason, retry after ms, tokens left,
 * requests left}: each bucket's level after the charge, or as it stood when refused by the
 * buckets or for want of a slot, as text ('' without its limit, or when refused by the retry
 * budget). Both buckets refusing, the longer wait names the refusal; no slot free names it
 * whatever the buckets say, its wait the longest of a moment's and theirs.
 */
export const ADMIT = script(`${NOW}
local need, limit, window = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local maxc, leaseTtl, attempt = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local ratio, rcap, floor = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local rpw = tonumber(ARGV[14])
local r = redis.call('HMGET', KEYS[3], 'level', 'at')
local rlevel = tonumber(r[1]) or rcap / 2
rlevel = math.min(rcap, rlevel + math.max(0, now - (tonumber(r[2]) or now)) / 1000 * floor)
if attempt > 1 and rlevel < 1 then
  local wait = math.ceil((1 - rlevel) / floor * 1000)
  return {'retry_budget', math.min(tonumber(ARGV[12]), math.max(1, wait))}
end
local busy = false
if maxc >= 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  busy = redis.call('ZCARD', KEYS[2]) >= maxc
end
-- A bucket of capacity cap at now (an absent one is full), and the wait until it holds n.
local function bucket(key, cap, n)
  local b = redis.call('HMGET', key, 'level', 'at')
  local bat = tonumber(b[2]) or now
  local level = math.min(cap, (tonumber(b[1]) or cap) + math.max(0, now - bat) * cap / window)
  local wait = 0
  if level < n - 1e-9 * math.max(1, n) then
    wait = window
    if n <= cap then wait = (n - level) / (cap / window) end
  end
  return level, math.max(now, bat), wait
end
-- Kept until it is full again (a bucket in debt longer than a window): absent reads full.
local function take(key, cap, level, at, n)
  redis.call('HSET', key, 'level', tostring(level - n), 'at', tostring(at))
  local full = (at - now) + (cap - (level - n)) * window / cap
  redis.call('PEXPIRE', key, math.ceil(math.max(full, 0)) + 1000)
  return tostring(level - n)
end
local tlevel, tat, twait, qlevel, qat, qwait = 0, now, 0, 0, now, 0
if limit >= 0 then tlevel, tat, twait = bucket(KEYS[1], limit, need) end
if rpw >= 0 then qlevel, qat, qwait = bucket(KEYS[4], rpw, 1) end
if busy or twait > 0 or qwait > 0 then
  local tleft, qleft, reason, least = '', '', 'tenant_tokens', 0
  if limit >= 0 then tleft = tostring(tlevel) end
  if rpw >= 0 then qleft = tostring(qlevel) end
  if qwait > twait then reason = 'tenant_requests' end
  -- No slot free: a slot frees within a moment, a spent quota not before it refills.
  if busy then reason, least = 'tenant_concurrency', tonumber(ARGV[11]) end
  local wait = math.max(1, math.min(window, math.ceil(math.max(least, twait, qwait))))
  return {reason, wait, tleft, qleft}
end
local tleft, qleft = '', ''
if limit >= 0 then tleft = take(KEYS[1], limit, tlevel, tat, need) end
if rpw >= 0 then qleft = take(KEYS[4], rpw, qlevel, qat, 1) end
local delta = ratio
if attempt > 1 then delta = -1 end
redis.call('HSET', KEYS[3], 'level', tostring(math.min(rcap, rlevel + delta)), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[13]))
if maxc >= 0 then
  redis.call('ZADD', KEYS[2], now + leaseTtl, ARGV[1])
  redis.call('PEXPIRE', KEYS[2], leaseTtl)
  return {'ok', 1, tleft, qleft}
end
return {'ok', 0, tleft, qleft}
`);

/**
 * KEYS: a quota's bucket hash (tokens or requests). ARGV: used − charged, the quota's limit,
 * window ms. Settles a finished request's charge: a positive delta is drawn further (no floor:
 * debt), a negative one given back, never above the limit.
 */
export const SETTLE_BUCKET = script(`${NOW}
local delta, limit, window = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local b = redis.call('HMGET', KEYS[1], 'level', 'at')
local bat = tonumber(b[2]) or now
local level = math.min(limit, (tonumber(b[1]) or limit) + math.max(0, now - bat) * limit / window)
level = math.min(limit, level - delta)
local at = math.max(now, bat)
redis.call('HSET', KEYS[1], 'level', tostring(level), 'at', tostring(at))
-- Kept until it is full again: a debt longer than a window is not forgiven by the TTL.
local full = (at - now) + (limit - level) * window / limit
redis.call('PEXPIRE', KEYS[1], math.ceil(math.max(full, 0)) + 1000)
return 1
`);

/**
 * KEYS: lease sorted set. ARGV: lease id, lease TTL ms. Pushes a live lease's expiry out — or
 * sets it again where it is gone (a Redis that restarted empty, a renewal late past its TTL):
 * its request still runs, and holds its slot. A released lease is never renewed (its holder
 * stops renewing before it releases, on the same connection).
 */
export const RENEW_LEASE = script(`${NOW}
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1
`);

/**
 * An idempotency key's value binds it to its request's fingerprint: `H<n>:<fingerprint><holder>`
 * while held (in flight), `A<n>:<fingerprint><answer JSON>` once answered, n the fingerprint's
 * length in bytes — so no fingerprint reads as another's prefix, whatever its characters. The
 * format before fingerprints, `I<holder>` and `D<answer JSON>`, is still read, as bound to no
 * fingerprint (in flight, or replayed to any claim): such keys were written by a gateway of the
 * earlier version, during a rolling upgrade or up to the replay TTL (10 min) after it, and
 * answered as they were before, never by running the request twice. Refusing them as mismatches
 * would turn away honest retries across the upgrade, and taking them as free would run a request
 * twice. A gateway of the earlier version reads `H` and `A` as in flight (a 409 `duplicate`)
 * and never overwrites them.
 */
const BOUND = `local bound = #ARGV[3] .. ':' .. ARGV[3]`;

/**
 * KEYS: the idempotency key. ARGV: holder token, in-flight TTL ms, fingerprint. Returns
 * {'claimed'}, {'mismatch'} (held or done for another fingerprint), {'in_flight'} or
 * {'done', response}.
 */
export const CLAIM = script(`${BOUND}
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], 'H' .. bound .. ARGV[1], 'PX', tonumber(ARGV[2]))
  return {'claimed'}
end
local tag = string.sub(v, 1, 1)
if tag == 'H' or tag == 'A' then
  if string.sub(v, 2, #bound + 1) ~= bound then return {'mismatch'} end
  if tag == 'A' then return {'done', string.sub(v, #bound + 2)} end
  return {'in_flight'}
end
if tag == 'D' then return {'done', string.sub(v, 2)} end
return {'in_flight'}
`);

/**
 * KEYS: the idempotency key. ARGV: holder token, action ('complete' | 'abandon' | 'renew'),
 * fingerprint, TTL ms, stored response. Only the holder's own claim is touched; a completed
 * answer stays bound to the fingerprint. A claim that is gone (a Redis that restarted empty) is
 * held again by its renewal, or answered by its completion, unless another request took the key.
 */
export const SETTLE_CLAIM = script(`${BOUND}
local v = redis.call('GET', KEYS[1])
if v and v ~= 'H' .. bound .. ARGV[1] then return 0 end
if not v and ARGV[2] == 'abandon' then return 0 end
if ARGV[2] == 'complete' then
  redis.call('SET', KEYS[1], 'A' .. bound .. ARGV[5], 'PX', tonumber(ARGV[4]))
elseif ARGV[2] == 'abandon' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], 'H' .. bound .. ARGV[1], 'PX', tonumber(ARGV[4]))
end
return 1
`);

/**
 * KEYS: the serving replicas' sorted set. ARGV: replica id, ms its beat holds (0: it no longer
 * serves). Each member's score is when its beat ends; those ended are let go.
 */
export const SERVING_BEAT = script(`${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], math.ceil(ttl))
else
  redis.call('ZREM', KEYS[1], ARGV[1])
end
return 1
`);

/** KEYS: the serving replicas' sorted set. Returns the replicas whose beat holds now. */
export const SERVING = script(`${NOW}
return redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')
`);

/**
 * KEYS: a stream's event log. ARGV: its TTL ms, then the events to add. Adds them, keeps the
 * log its TTL from now, and publishes them on the log's key as its channel: the index of the
 * first, a newline, then the events one after another (each ends with a blank line). Returns
 * the log's length.
 */
export const APPEND_EVENTS = script(`
local len = redis.call('RPUSH', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PUBLISH', KEYS[1], (len - #ARGV + 1) .. '\\n' .. table.concat(ARGV, '', 2))
return len
`);

/**
 * KEYS: the replicas' ticks (a hash, replica → text), and when each ends (a sorted set). ARGV:
 * replica id, ms it holds, its text. Those ended are let go.
 */
export const POST_WINDOW = script(`${NOW}
local ended = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
if #ended > 0 then
  redis.call('HDEL', KEYS[1], unpack(ended))
  redis.call('ZREM', KEYS[2], unpack(ended))
end
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.ceil(ttl))
redis.call('PEXPIRE', KEYS[2], math.ceil(ttl))
return 1
`);

/** KEYS: as POST_WINDOW's. Returns replica, text, replica, text… of the ticks that hold now. */
export const WINDOWS = script(`${NOW}
local live = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf')
if #live == 0 then return {} end
local texts = redis.call('HMGET', KEYS[1], unpack(live))
local out = {}
for i, replica in ipairs(live) do
  if texts[i] then
    out[#out + 1] = replica
    out[#out + 1] = texts[i]
  end
end
return out
`);

/**
 * KEYS: a kept turn. ARGV: ms until it is due, ms it is held after. Keeps it (replacing any the
 * key held) as when it is due on Redis's clock, until it is no longer held.
 */
export const KEEP_TURN = script(`${NOW}
local inMs, grace = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('SET', KEYS[1], math.floor(now + inMs), 'PX', math.ceil(inMs + grace))
return 1
`);

/**
 * KEYS: a kept turn. ARGV: how early it may be taken (ms), the channel turns' ends are told on,
 * the message that tells this one's. Returns nil when none is kept; 0 when it is due, taken
 * (deleted) and its end told; else the ms until it is due.
 */
export const TAKE_TURN = script(`${NOW}
local due = redis.call('GET', KEYS[1])
if not due then return false end
local left = tonumber(due) - now
if left > tonumber(ARGV[1]) then return math.ceil(left) end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 0
`);

/** KEYS: a kept turn. ARGV: the channel, the message. Ends it, told only when it was kept. */
export const END_TURN = script(`
if redis.call('DEL', KEYS[1]) == 1 then redis.call('PUBLISH', ARGV[1], ARGV[2]) end
return 1
`);
