-- Marks a resend (lastSentAt = now) once the cooldown since the last send has passed.
-- Same id, same expiry, same code: never a second active code.
-- Another account's OTP answers 'foreign' and is left untouched.
-- KEYS: record
-- ARGV: now ('' for the server's TIME; see scripts.ts), cooldownMs, accountId
-- Returns {'ok', record} | {'cooldown', retryAfterMs} | {'locked'} | {'expired'} | {'not_found'} | {'foreign'}
local now = server_now(ARGV[1])
local r = redis.call('HMGET', KEYS[1], 'expiresAt', 'attemptsLeft', 'retainUntil', 'lastSentAt', 'accountId')
if not r[1] then return { 'not_found' } end
if r[5] ~= ARGV[3] then return { 'foreign' } end
if now >= tonumber(r[3]) then
  redis.call('DEL', KEYS[1])
  return { 'not_found' }
end
if tonumber(r[2]) <= 0 then return { 'locked' } end
if now >= tonumber(r[1]) then return { 'expired' } end
local wait = tonumber(r[4]) + tonumber(ARGV[2]) - now
if wait > 0 then return { 'cooldown', wait } end
redis.call('HSET', KEYS[1], 'lastSentAt', string.format('%d', now))
return { 'ok', redis.call('HGETALL', KEYS[1]) }
