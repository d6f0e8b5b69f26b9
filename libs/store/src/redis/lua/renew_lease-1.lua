--[[
  Extends a live concurrency lease by leaseMs from now.

  Input:
    KEYS[1] concurrency leases sorted set
    ARGV[1] lease id
    ARGV[2] leaseMs

  Output: { new expiry (epoch ms), or -1 for an unknown or expired lease; leasesInUse }
]]
local rcall = redis.call
--- @include "clock"
--- @include "lease_set"

local _, nowMs = serverTime()
rcall('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowMs)
if not rcall('ZSCORE', KEYS[1], ARGV[1]) then
  return { -1, rcall('ZCARD', KEYS[1]) }
end
local expiresAt = nowMs + tonumber(ARGV[2])
rcall('ZADD', KEYS[1], 'XX', expiresAt, ARGV[1])
leaseSetExpire(KEYS[1])
return { expiresAt, rcall('ZCARD', KEYS[1]) }
