--[[
  Forgets an in-flight idempotency key whose work did not happen, so the next claim runs it
  again; only the key's current token may. Twin of libs/core releaseIdempotencyEntry.

  Input:
    KEYS[1] the key's record hash
    ARGV[1] token

  Output: 1 released, 2 absent (unknown or expired), 0 lease lost (another token, or completed)
]]
local rcall = redis.call

local record = rcall('HMGET', KEYS[1], 'st', 'tok')
if not record[1] then
  return 2
end
if record[1] ~= 'in_flight' or record[2] ~= ARGV[1] then
  return 0
end
rcall('DEL', KEYS[1])
return 1
