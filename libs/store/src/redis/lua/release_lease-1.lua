--[[
  Releases a concurrency lease before it expires.

  Input:
    KEYS[1] concurrency leases sorted set
    ARGV[1] lease id

  Output: { released (1, or 0 for an unknown or expired lease), leasesInUse }
]]
local rcall = redis.call
--- @include "clock"

local _, nowMs = serverTime()
rcall('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowMs)
local released = rcall('ZREM', KEYS[1], ARGV[1])
return { released, rcall('ZCARD', KEYS[1]) }
