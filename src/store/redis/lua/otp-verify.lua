-- Verifies a code hash. Right: the record is deleted (the id is then not found) and the phone is free.
-- Wrong: one attempt used and 'invalid' with the attempts left; the one that uses the last attempt answers 'invalid'
-- with 0 (clients lock their flow at 0, spec §3.1), locks the OTP and frees the phone; verifies after it answer 'locked'.
-- Another account's OTP answers 'foreign' and is left untouched (no attempt used, nothing deleted).
-- The caller drops the id index (another slot) after 'verified' and after 'not_found'.
-- KEYS: record, active
-- ARGV: id, codeHash, now ('' for the server's TIME; see scripts.ts), accountId
-- Returns {'verified', record} | {'invalid', attemptsLeft, record} | {'locked', record} | {'expired'}
--       | {'not_found'} | {'foreign'}
local id = ARGV[1]
local now = server_now(ARGV[3])
local r = redis.call('HMGET', KEYS[1], 'codeHash', 'expiresAt', 'attemptsLeft', 'retainUntil', 'accountId')
if not r[1] then return { 'not_found' } end
if r[5] ~= ARGV[4] then return { 'foreign' } end
if now >= tonumber(r[4]) then
  redis.call('DEL', KEYS[1])
  return { 'not_found' }
end
local left = tonumber(r[3])
if left <= 0 then return { 'locked', redis.call('HGETALL', KEYS[1]) } end
if now >= tonumber(r[2]) then return { 'expired' } end

local function freePhone()
  local a = redis.call('GET', KEYS[2])
  if a and string.sub(a, 1, #id + 1) == id .. '|' then redis.call('DEL', KEYS[2]) end
end

if r[1] == ARGV[2] then
  local rec = redis.call('HGETALL', KEYS[1])
  redis.call('DEL', KEYS[1])
  freePhone()
  return { 'verified', rec }
end
left = left - 1
redis.call('HSET', KEYS[1], 'attemptsLeft', left)
if left == 0 then freePhone() end
return { 'invalid', left, redis.call('HGETALL', KEYS[1]) }
