-- Fixed windows (second, minute, day) over one or more keys, all or nothing.
-- State per key: hash {si, sn, mi, mn, di, dn}: per window the index of the window counted (floor(now / size))
-- and the count in it. A stored index older than the caller's is a window that has rolled: its count is 0. A stored
-- index newer than the caller's (another instance's clock is a little ahead) is the window counted: a take never
-- goes back to a window that has closed elsewhere, so the count of a window only ever grows.
-- KEYS: one hash per limited key (distinct)
-- ARGV: idxSecond, idxMinute, idxDay, then per key: cost, limitSecond, limitMinute, limitDay, ttlMs
--       (a limit of -1: that window is not limited for this key, neither checked nor counted)
-- Returns {allowed 0|1, then per key and window (second, minute, day): index, count}, flat; the count includes
-- this take when allowed; an unlimited window returns 0, 0.
local idx = { tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]) }
local FIELDS = { { 'si', 'sn' }, { 'mi', 'mn' }, { 'di', 'dn' } }
local n = #KEYS
local state = {}
local allowed = 1
for k = 1, n do
  local base = 3 + (k - 1) * 5
  local cost = tonumber(ARGV[base + 1])
  local s = redis.call('HMGET', KEYS[k], 'si', 'sn', 'mi', 'mn', 'di', 'dn')
  local ks = {}
  for w = 1, 3 do
    local limit = tonumber(ARGV[base + 1 + w])
    local i = 0
    local c = 0
    if limit >= 0 then
      i = idx[w]
      local si = tonumber(s[2 * w - 1])
      if si and si >= i then
        i = si
        c = tonumber(s[2 * w]) or 0
      end
      if c + cost > limit then allowed = 0 end
    end
    ks[w] = { limit, i, c }
  end
  state[k] = ks
end
local out = { allowed }
for k = 1, n do
  local base = 3 + (k - 1) * 5
  local cost = tonumber(ARGV[base + 1])
  local ks = state[k]
  local set = {}
  for w = 1, 3 do
    local limit, i, c = ks[w][1], ks[w][2], ks[w][3]
    if allowed == 1 and limit >= 0 then
      c = c + cost
      set[#set + 1] = FIELDS[w][1]
      set[#set + 1] = string.format('%d', i)
      set[#set + 1] = FIELDS[w][2]
      set[#set + 1] = string.format('%d', c)
    end
    out[#out + 1] = i
    out[#out + 1] = c
  end
  if #set > 0 then
    redis.call('HSET', KEYS[k], unpack(set))
    -- Lives until the end of its longest window counted (plus a grace for clock skew); never shortened by a
    -- caller that limits only shorter windows.
    local ttl = tonumber(ARGV[base + 5])
    if redis.call('PTTL', KEYS[k]) < ttl then redis.call('PEXPIRE', KEYS[k], ttl) end
  end
end
return out
