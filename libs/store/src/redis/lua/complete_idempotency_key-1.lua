--[[
  Stores the response of an in-flight idempotency key; only the key's current token may. The
  key is then kept for its retention from now. Completing again with the same token keeps the
  first response. Twin of libs/core completeIdempotencyEntry.

  Input:
    KEYS[1] the key's record hash
    ARGV[1] token
    ARGV[2] response (opaque text)

  Output: CODE.completed, or CODE.lease_lost (unknown key, or another token holds it)
]]
local rcall = redis.call
--- @include "codes"
--- @include "clock"

local key = KEYS[1]
local record = rcall('HMGET', key, 'st', 'tok', 'ra')
if not record[1] or record[2] ~= ARGV[1] then
  return CODE.lease_lost
end
if record[1] == 'completed' then
  return CODE.completed
end
local _, nowMs = serverTime()
local retentionMs = tonumber(record[3])
rcall('HSET', key, 'st', 'completed', 'resp', ARGV[2], 'co', nowMs, 'ex', nowMs + retentionMs)
rcall('HDEL', key, 'le')
rcall('PEXPIRE', key, retentionMs)
return CODE.completed
