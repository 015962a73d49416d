-- Pushes items. An id already queued (due, scheduled or leased) is left alone (idempotent push);
-- a dead one is replaced by the new item with fresh attempts.
-- KEYS: payload, meta, error, leases, dead, lane:receipt, lane:priority, lane:bulk
-- ARGV: now ('' for the server's TIME; see scripts.ts), then (id, lane 0..2, delayMs, maxAttempts, payload) repeated:
-- an item is due at now + delayMs (a delay, not a time: the caller's clock may differ from the server's)
-- Returns the number of items added.
local now = server_now(ARGV[1])
local added = 0
for i = 2, #ARGV, 5 do
  local id = ARGV[i]
  local runAt = string.format('%d', now + tonumber(ARGV[i + 2]))
  local meta = ARGV[i + 1] .. '|0|' .. ARGV[i + 3] .. '|' .. runAt
  local fresh = redis.call('HSETNX', KEYS[2], id, meta)
  if fresh == 0 and redis.call('ZREM', KEYS[5], id) == 1 then
    redis.call('HSET', KEYS[2], id, meta)
    redis.call('HDEL', KEYS[3], id)
    fresh = 1
  end
  if fresh == 1 then
    redis.call('HSET', KEYS[1], id, ARGV[i + 4])
    redis.call('ZADD', KEYS[6 + tonumber(ARGV[i + 1])], runAt, id)
    added = added + 1
  end
end
return added
