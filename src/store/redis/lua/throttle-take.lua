-- Token bucket. State: hash {t = tokens (float), ts = last refill time, ms}.
-- Takes one or more costs in order, as that many takes at the same instant would: each is allowed when the
-- tokens the ones before it left cover it; a refused one takes nothing.
-- KEYS: bucket
-- ARGV: ratePerSec, burst, now ('' for the server's TIME; see scripts.ts), cost1 [, cost2 ...]
-- Returns {allowed 0|1, remaining (floored), retryAfterMs} per cost, flat
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = server_now(ARGV[3])
local tokens = burst
local ts = now
local s = redis.call('HMGET', KEYS[1], 't', 'ts')
if s[1] then
  tokens = tonumber(s[1])
  ts = tonumber(s[2])
  -- The clock of another instance may be a little behind: never refill backwards.
  if now > ts then
    tokens = tokens + (now - ts) * rate / 1000
    ts = now
  end
end
if tokens > burst then tokens = burst end
local out = {}
for i = 4, #ARGV do
  local cost = tonumber(ARGV[i])
  local allowed = 0
  local retry = 0
  -- The epsilons absorb float error so that exact refills (e.g. 100 ms at 10/s) count as whole tokens.
  if tokens + 1e-9 >= cost then
    tokens = tokens - cost
    if tokens < 0 then tokens = 0 end
    allowed = 1
  else
    retry = math.ceil((cost - tokens) * 1000 / rate - 1e-6)
    if retry < 1 then retry = 1 end
  end
  out[#out + 1] = allowed
  out[#out + 1] = math.floor(tokens + 1e-9)
  out[#out + 1] = retry
end
redis.call('HSET', KEYS[1], 't', string.format('%.17g', tokens), 'ts', string.format('%d', ts))
-- Once full again the bucket is the same as no bucket: let it expire.
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) * 1000 / rate) + 1000)
return out
