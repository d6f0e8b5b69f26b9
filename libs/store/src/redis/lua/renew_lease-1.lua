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

local _, nowMs = serverTime()
rcall('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowMs)
if not rcall('ZSCORE', KEYS[1], ARGV[1]) then
  return { -1, rcall('ZCARD', KEYS[1]) }
end
local expiresAt = nowMs + tonumber(ARGV[2])
rcall('ZADD', KEYS[1], 'XX', expiresAt, ARGV[1])
rcall('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + 1000)
return { expiresAt, rcall('ZCARD', KEYS[1]) }
