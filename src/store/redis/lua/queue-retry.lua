-- A failed attempt: due again at now + delay, or dead once attempts reached maxAttempts.
-- KEYS: payload, meta, error, leases, dead, lane:receipt, lane:priority, lane:bulk
-- ARGV: id, now ('' for the server's TIME; see scripts.ts), delayMs, error, deadCap, refund (1: the attempt does not count; never dead)
-- Returns 'scheduled', 'dead' or 'unknown'.
local id = ARGV[1]
local m = redis.call('HGET', KEYS[2], id)
if not m then return 'unknown' end
if redis.call('ZSCORE', KEYS[5], id) then return 'dead' end
local lane, attempts, maxAttempts = string.match(m, '^(%d)|(%d+)|(%d+)|')
local now = server_now(ARGV[2])
local laneKey = KEYS[6 + tonumber(lane)]
redis.call('ZREM', KEYS[4], id)
redis.call('ZREM', laneKey, id)
redis.call('HSET', KEYS[3], id, ARGV[4])
if ARGV[6] == '1' then
  attempts = tostring(math.max(tonumber(attempts) - 1, 0))
elseif tonumber(attempts) >= tonumber(maxAttempts) then
  redis.call('ZADD', KEYS[5], now, id)
  local over = redis.call('ZCARD', KEYS[5]) - tonumber(ARGV[5])
  if over > 0 then
    local old = redis.call('ZRANGE', KEYS[5], 0, over - 1)
    redis.call('ZREMRANGEBYRANK', KEYS[5], 0, over - 1)
    redis.call('HDEL', KEYS[1], unpack(old))
    redis.call('HDEL', KEYS[2], unpack(old))
    redis.call('HDEL', KEYS[3], unpack(old))
  end
  return 'dead'
end
local runAt = string.format('%d', now + tonumber(ARGV[3]))
redis.call('HSET', KEYS[2], id, lane .. '|' .. attempts .. '|' .. maxAttempts .. '|' .. runAt)
redis.call('ZADD', laneKey, runAt, id)
return 'scheduled'
