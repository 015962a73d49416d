-- Removes an item that is not leased (due, scheduled or dead). Returns 1 when removed, else 0.
-- KEYS: payload, meta, error, leases, dead, lane:receipt, lane:priority, lane:bulk
-- ARGV: id
local id = ARGV[1]
local m = redis.call('HGET', KEYS[2], id)
if not m then return 0 end
if redis.call('ZSCORE', KEYS[4], id) then return 0 end
redis.call('ZREM', KEYS[6 + tonumber(string.sub(m, 1, 1))], id)
redis.call('ZREM', KEYS[5], id)
redis.call('HDEL', KEYS[1], id)
redis.call('HDEL', KEYS[2], id)
redis.call('HDEL', KEYS[3], id)
return 1
