-- Notes that an account may have an OTP for the phone until expiresAt (never lowering a later expiry),
-- drops accounts whose OTPs have all expired, and lets the key die with the last of them. Only an index:
-- readers check each account's active pointer, so a member left by a refused create is harmless.
-- KEYS: phone index (zset accountId -> expiresAt)
-- ARGV: accountId, expiresAt, now ('' for the server's TIME; see scripts.ts)
local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
if (not cur) or tonumber(cur) < tonumber(ARGV[2]) then redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', server_now(ARGV[3]))
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then redis.call('PEXPIREAT', KEYS[1], last[2]) end
return 1
