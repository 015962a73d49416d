-- Whether a limited link has a click left, without taking one (HEAD requests).
-- KEYS[1] the link's counter; ARGV[1] max clicks, ARGV[2] the floor from SQL. Returns 1 or 0.
local n = tonumber(redis.call('GET', KEYS[1]) or ARGV[2])
if n >= tonumber(ARGV[1]) then
  return 0
end
return 1
