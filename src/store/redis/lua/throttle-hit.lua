-- Sliding window log: at most `limit` hits in any `windowMs`; a refused hit is not recorded.
-- A hit at time t counts while now - t < windowMs.
-- KEYS: window (zset member → time)
-- ARGV: limit, windowMs, now ('' for the server's TIME; see scripts.ts), member (unique per hit)
-- Returns {allowed 0|1, count, retryAfterMs}
local limit = tonumber(ARGV[1])
local win = tonumber(ARGV[2])
local now = server_now(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - win)
local n = redis.call('ZCARD', KEYS[1])
if n < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], win)
  return { 1, n + 1, 0 }
end
local retry = win
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if oldest[2] then retry = tonumber(oldest[2]) + win - now end
if retry < 1 then retry = 1 end
return { 0, n, retry }
