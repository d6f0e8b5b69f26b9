--[[
  Reads an idempotency key's state and times.

  Input:
    KEYS[1] the key's record hash

  Output: {} when unknown, else { state, createdAt, expiresAt, leaseExpiresAt or -1, completedAt or -1 }
]]
local rcall = redis.call
--- @include "clock"

local record = rcall('HMGET', KEYS[1], 'st', 'ca', 'le', 'co')
if not record[1] then
  return {}
end
local _, nowMs = serverTime()
local ttl = rcall('PTTL', KEYS[1])
return { record[1], tonumber(record[2]), nowMs + ttl, tonumber(record[3]) or -1, tonumber(record[4]) or -1 }
