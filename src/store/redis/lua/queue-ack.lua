-- Removes items in whatever state they are (done work); unknown ids are ignored.
-- KEYS: payload, meta, error, leases, dead, lane:receipt, lane:priority, lane:bulk
-- ARGV: ids
for i = 1, #ARGV do
  local id = ARGV[i]
  local m = redis.call('HGET', KEYS[2], id)
  if m then
    -- The usual case is a leased item: one ZREM, no lane or dead lookup.
    if redis.call('ZREM', KEYS[4], id) == 0 then
      redis.call('ZREM', KEYS[6 + tonumber(string.sub(m, 1, 1))], id)
      redis.call('ZREM', KEYS[5], id)
    end
    redis.call('HDEL', KEYS[1], id)
    redis.call('HDEL', KEYS[2], id)
    redis.call('HDEL', KEYS[3], id)
  end
end
return 0
