-- Counts, per lane, the items of one shard the next lease call could take: due items, plus expired leases that the
-- lease script puts back into their lane (not those that die on it). Read-only. The 4th value: expired leases, dying
-- ones included (a shard that has some is reclaimed even when nothing is leased from it).
-- KEYS: leases, meta, lane:receipt, lane:priority, lane:bulk. ARGV: now ('' for the server's TIME), reclaimMax.
local now = server_now(ARGV[1])
local due = { redis.call('ZCOUNT', KEYS[3], '-inf', now), redis.call('ZCOUNT', KEYS[4], '-inf', now), redis.call('ZCOUNT', KEYS[5], '-inf', now) }
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(expired) do
  local m = redis.call('HGET', KEYS[2], id)
  if m then
    local lane, attempts, maxAttempts = string.match(m, '^(%d)|(%d+)|(%d+)|')
    if tonumber(attempts) < tonumber(maxAttempts) then due[tonumber(lane) + 1] = due[tonumber(lane) + 1] + 1 end
  end
end
return { due[1], due[2], due[3], #expired }
