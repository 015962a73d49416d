-- Counts one failure of a key and starts its cool-down (FailureCooldowns.fail): from `threshold` failures on,
-- firstMs doubled per failure past the threshold, at most maxMs; a cool-down already running that ends later is kept.
-- The key is forgotten forgetMs after the cool-down ends (after the failure when there is none): by the callers'
-- clock (forgetAt), as in the embedded store; the TTL only clears the hash away.
-- KEYS: state (hash: failures, until, forgetAt)
-- ARGV: now ('' for the server's TIME; see scripts.ts), threshold, firstMs, maxMs, forgetMs
-- Returns {failures, cooldownMs}
local now = server_now(ARGV[1])
local threshold = tonumber(ARGV[2])
local h = redis.call('HMGET', KEYS[1], 'failures', 'until', 'forgetAt')
local failures, untilMs = 0, 0
if h[3] and tonumber(h[3]) > now then
  failures = tonumber(h[1])
  untilMs = tonumber(h[2])
end
failures = failures + 1
local cooldown = 0
if failures >= threshold then
  -- As cooldownAfter in types.ts: the exponent is bounded so the number stays finite.
  cooldown = math.floor(math.min(tonumber(ARGV[4]), tonumber(ARGV[3]) * 2 ^ math.min(failures - threshold, 40)))
end
untilMs = math.max(untilMs, now + cooldown)
local forgetAt = untilMs + tonumber(ARGV[5])
redis.call('HSET', KEYS[1], 'failures', failures, 'until', untilMs, 'forgetAt', forgetAt)
redis.call('PEXPIRE', KEYS[1], math.max(1, forgetAt - now))
return { failures, cooldown }
