-- Creates an OTP when (account, phone) has no unexpired, unlocked OTP and fewer than `rateLimit`
-- creates happened in the last `rateWindowMs`. The active pointer ("id|expiresAt") is cleared
-- whenever its OTP is verified or locked, so it alone tells whether the phone is busy.
-- The id index lives in another slot, so the caller sets it (NX) before and removes it on refusal.
-- KEYS: active, rate, record
-- ARGV: now ('' for the server's TIME; see scripts.ts), rateLimit, rateWindowMs, retainUntil,
--       then field/value pairs of the record (id, accountId, phone, ... expiresAt ...)
-- Returns {'OK'} | {'ACTIVE', retryAfterMs, activeId} | {'RATE', retryAfterMs} | {'DUPLICATE'}
local now = server_now(ARGV[1])
local limit = tonumber(ARGV[2])
local win = tonumber(ARGV[3])
local retainUntil = tonumber(ARGV[4])
if redis.call('EXISTS', KEYS[3]) == 1 then return { 'DUPLICATE' } end

local a = redis.call('GET', KEYS[1])
if a then
  local activeId, exp = string.match(a, '^(.*)|(%d+)$')
  exp = tonumber(exp)
  if exp and now < exp then return { 'ACTIVE', exp - now, activeId } end
end

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - win)
if redis.call('ZCARD', KEYS[2]) >= limit then
  local retry = win
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if oldest[2] then retry = tonumber(oldest[2]) + win - now end
  if retry < 1 then retry = 1 end
  return { 'RATE', retry }
end

local fields = {}
local id, expiresAt
for i = 5, #ARGV, 2 do
  fields[#fields + 1] = ARGV[i]
  fields[#fields + 1] = ARGV[i + 1]
  if ARGV[i] == 'id' then id = ARGV[i + 1] end
  if ARGV[i] == 'expiresAt' then expiresAt = tonumber(ARGV[i + 1]) end
end
redis.call('ZADD', KEYS[2], now, id)
redis.call('PEXPIRE', KEYS[2], win)
redis.call('HSET', KEYS[3], unpack(fields))
-- TTLs are relative to the caller's `now`; they only collect garbage, the checks above use `now`.
local keep = math.max(retainUntil - now, 1)
redis.call('PEXPIRE', KEYS[3], keep)
if expiresAt > now then
  redis.call('SET', KEYS[1], id .. '|' .. string.format('%d', expiresAt), 'PX', expiresAt - now)
end
return { 'OK' }
