-- A browser dialer identity's presence, let go by the instance that holds it (the browser unregistered or its
-- WebSocket closed). KEYS[1] the presence hash {instance, host, port}. ARGV[1] this instance's id; ARGV[2] how long,
-- in ms, another browser still registered here keeps it ('' or 0: none is, delete it).
-- A hash naming another instance is a newer registration there and is left alone. Returns 1 when deleted,
-- 2 when kept for the remaining registration, 0 when it was not this instance's.
if redis.call('HGET', KEYS[1], 'instance') ~= ARGV[1] then return 0 end
local keep = tonumber(ARGV[2]) or 0
if keep <= 0 then
  redis.call('DEL', KEYS[1])
  return 1
end
redis.call('PEXPIRE', KEYS[1], keep)
return 2
