-- A live USSD session's state, written only over the version it was read at (hops of one session serialised
-- across instances). KEYS[1] the session's hash {v, row}. ARGV: expected version (-1: the key must not exist),
-- the new row (JSON; empty: delete the key), TTL in ms. Returns 1 when written, 0 when another hop got there first.
local current = redis.call('HGET', KEYS[1], 'v')
local expected = tonumber(ARGV[1])
if expected == -1 then
  if current then return 0 end
elseif (not current) or tonumber(current) ~= expected then
  return 0
end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
  return 1
end
redis.call('HSET', KEYS[1], 'v', expected + 1, 'row', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
