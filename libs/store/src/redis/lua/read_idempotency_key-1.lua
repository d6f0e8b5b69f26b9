--[[
  Reads an idempotency key's state and times (expiresAt as set with the key's TTL, by the same clock).

  Input:
    KEYS[1] the key's record hash

  Output: {} when unknown, else { state, createdAt, expiresAt, leaseExpiresAt or -1, completedAt or -1 }
]]
local rcall = redis.call

local record = rcall('HMGET', KEYS[1], 'st', 'ca', 'ex', 'le', 'co')
if not record[1] then
  return {}
end
return { record[1], tonumber(record[2]), tonumber(record[3]), tonumber(record[4]) or -1, tonumber(record[5]) or -1 }
