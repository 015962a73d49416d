-- Leases up to `max` due items, serving the lanes in the order given.
-- Expired leases are first put back into their lane, due at their old deadline and with their
-- attempts kept; one whose lease used the last attempt dies instead (no endless poison loop).
-- KEYS: payload, meta, error, leases, dead, lane:receipt, lane:priority, lane:bulk
-- ARGV: now ('' for the server's TIME; see scripts.ts), leaseMs, max, lanes (digits, e.g. "012"), reclaimMax, deadCap
-- Returns a flat array, 7 per item: id, lane, attempts, maxAttempts, runAt, payload, error
-- (error is "" when none, else "!" .. error, because a nil would end a Lua array).
local now = server_now(ARGV[1])
local deadline = now + tonumber(ARGV[2])
local max = tonumber(ARGV[3])
local lanes = ARGV[4]
local deadCap = tonumber(ARGV[6])

local expired = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[5]))
if #expired > 0 then
  local died = false
  for i = 1, #expired, 2 do
    local id = expired[i]
    redis.call('ZREM', KEYS[4], id)
    local m = redis.call('HGET', KEYS[2], id)
    if m then
      local lane, attempts, maxAttempts = string.match(m, '^(%d)|(%d+)|(%d+)|')
      if tonumber(attempts) >= tonumber(maxAttempts) then
        redis.call('HSET', KEYS[3], id, 'lease expired')
        redis.call('ZADD', KEYS[5], now, id)
        died = true
      else
        redis.call('ZADD', KEYS[6 + tonumber(lane)], expired[i + 1], id)
      end
    end
  end
  if died then
    local over = redis.call('ZCARD', KEYS[5]) - deadCap
    if over > 0 then
      local old = redis.call('ZRANGE', KEYS[5], 0, over - 1)
      redis.call('ZREMRANGEBYRANK', KEYS[5], 0, over - 1)
      redis.call('HDEL', KEYS[1], unpack(old))
      redis.call('HDEL', KEYS[2], unpack(old))
      redis.call('HDEL', KEYS[3], unpack(old))
    end
  end
end

local out = {}
local n = 0
for l = 1, #lanes do
  if n >= max then break end
  local key = KEYS[6 + tonumber(string.sub(lanes, l, l))]
  local ids = redis.call('ZRANGEBYSCORE', key, '-inf', now, 'LIMIT', 0, max - n)
  if #ids > 0 then
    redis.call('ZREM', key, unpack(ids))
    local leases = {}
    for _, id in ipairs(ids) do
      local m = redis.call('HGET', KEYS[2], id)
      if m then
        local lane, attempts, maxAttempts, runAt = string.match(m, '^(%d)|(%d+)|(%d+)|(%-?%d+)$')
        attempts = tonumber(attempts) + 1
        redis.call('HSET', KEYS[2], id, lane .. '|' .. attempts .. '|' .. maxAttempts .. '|' .. runAt)
        leases[#leases + 1] = deadline
        leases[#leases + 1] = id
        local err = redis.call('HGET', KEYS[3], id)
        out[#out + 1] = id
        out[#out + 1] = lane
        out[#out + 1] = attempts
        out[#out + 1] = maxAttempts
        out[#out + 1] = runAt
        out[#out + 1] = redis.call('HGET', KEYS[1], id)
        out[#out + 1] = err and ('!' .. err) or ''
        n = n + 1
      end
    end
    if #leases > 0 then
      redis.call('ZADD', KEYS[4], unpack(leases))
    end
  end
end
return out
