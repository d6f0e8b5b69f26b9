--[[
  Forgets an in-flight idempotency key whose work did not happen, so the next claim runs it
  again; only the key's current token may. Twin of libs/core releaseIdempotencyEntry.

  Input:
    KEYS[1] the key's record hash
    ARGV[1] token

  Output: CODE.released, CODE.absent (unknown or expired), or CODE.lease_lost (another token,
    or completed)
]]
local rcall = redis.call
--- @include "codes"

local record = rcall('HMGET', KEYS[1], 'st', 'tok')
if not record[1] then
  return CODE.absent
end
if record[1] ~= 'in_flight' or record[2] ~= ARGV[1] then
  return CODE.lease_lost
end
rcall('DEL', KEYS[1])
return CODE.released
