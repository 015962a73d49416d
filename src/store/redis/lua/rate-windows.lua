-- Fixed windows (second, minute, day), one or more takes in order, each over one or more keys, all or nothing:
-- as that many takes one after another at the same instant.
-- State per key: hash {si, sn, mi, mn, di, dn}: per window the index of the window counted (floor(now / size))
-- and the count in it. A stored index older than the caller's is a window that has rolled: its count is 0. A stored
-- index newer than the caller's (another instance's clock is a little ahead) is the window counted: a take never
-- goes back to a window that has closed elsewhere, so the count of a window only ever grows.
-- KEYS: one hash per key the takes name (distinct)
-- ARGV: now ('' for the server's TIME; see scripts.ts), graceMs (how long counters outlive their longest window),
--       number of takes, then per take: number of entries, then per entry:
--       key (index into KEYS), cost, limitSecond, limitMinute, limitDay
--       (a limit of -1: that window is not limited for this entry, neither checked nor counted; an entry's key
--       appears once per take)
-- Returns now, then per take: allowed 0|1, then per entry and window (second, minute, day): index, count; flat. The count
-- includes the take when allowed; an unlimited window returns 0, 0.
local now = server_now(ARGV[1])
local grace = tonumber(ARGV[2])
local SIZES = { 1000, 60000, 86400000 }
local idx = { math.floor(now / SIZES[1]), math.floor(now / SIZES[2]), math.floor(now / SIZES[3]) }
local FIELDS = { { 'si', 'sn' }, { 'mi', 'mn' }, { 'di', 'dn' } }
local cache = {}
local function load(k)
  local st = cache[k]
  if st then return st end
  local s = redis.call('HMGET', KEYS[k], 'si', 'sn', 'mi', 'mn', 'di', 'dn')
  st = { i = {}, c = {}, ttl = 0, dirty = false }
  for w = 1, 3 do
    st.i[w] = tonumber(s[2 * w - 1])
    st.c[w] = tonumber(s[2 * w]) or 0
  end
  cache[k] = st
  return st
end

local out = { now }
local pos = 4
for _ = 1, tonumber(ARGV[3]) do
  local n = tonumber(ARGV[pos])
  pos = pos + 1
  local rows = {}
  local allowed = 1
  for e = 1, n do
    local row = { k = tonumber(ARGV[pos]), cost = tonumber(ARGV[pos + 1]), ttl = 0, lim = {}, i = {}, c = {} }
    local st = load(row.k)
    for w = 1, 3 do
      local limit = tonumber(ARGV[pos + 1 + w])
      local i, c = 0, 0
      if limit >= 0 then
        i = idx[w]
        if st.i[w] and st.i[w] >= i then
          i = st.i[w]
          c = st.c[w]
        end
        if c + row.cost > limit then allowed = 0 end
      end
      row.lim[w], row.i[w], row.c[w] = limit, i, c
      -- Kept until the end of the current window of each window it limits, plus the grace.
      if limit >= 0 then row.ttl = math.max(row.ttl, (idx[w] + 1) * SIZES[w] - now + grace) end
    end
    if row.ttl == 0 then row.ttl = grace end
    rows[e] = row
    pos = pos + 5
  end
  out[#out + 1] = allowed
  for e = 1, n do
    local row = rows[e]
    local st = cache[row.k]
    for w = 1, 3 do
      if allowed == 1 and row.lim[w] >= 0 then
        row.c[w] = row.c[w] + row.cost
        st.i[w], st.c[w] = row.i[w], row.c[w]
        st.dirty = true
        if row.ttl > st.ttl then st.ttl = row.ttl end
      end
      out[#out + 1] = row.i[w]
      out[#out + 1] = row.c[w]
    end
  end
end

for k, st in pairs(cache) do
  if st.dirty then
    local set = {}
    for w = 1, 3 do
      if st.i[w] then
        set[#set + 1] = FIELDS[w][1]
        set[#set + 1] = string.format('%d', st.i[w])
        set[#set + 1] = FIELDS[w][2]
        set[#set + 1] = string.format('%d', st.c[w])
      end
    end
    redis.call('HSET', KEYS[k], unpack(set))
    -- Lives until the end of its longest window counted (plus a grace for clock skew); never shortened by a
    -- take that limits only shorter windows.
    if redis.call('PTTL', KEYS[k]) < st.ttl then redis.call('PEXPIRE', KEYS[k], st.ttl) end
  end
end
return out
