-- Takes one click of a limited link, atomically across instances.
-- KEYS[1] the link's counter; ARGV[1] max clicks, ARGV[2] the floor from SQL (seeds a missing key).
-- Returns the new count, or 0 when the limit is used up (the counter is not raised past the limit).
local n = tonumber(redis.call('GET', KEYS[1]) or ARGV[2])
if n >= tonumber(ARGV[1]) then
  return 0
end
n = n + 1
redis.call('SET', KEYS[1], n)
return n
