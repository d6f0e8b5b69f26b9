--[[
  Lists the dependencies registered in a namespace, forgetting those unused for the retention.

  Input:
    KEYS[1] namespace dependency sorted set
    ARGV[1] retentionMs

  Output: the dependency names, sorted
]]
local rcall = redis.call
--- @include "clock"

local _, nowMs = serverTime()
rcall('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowMs - tonumber(ARGV[1]))
local names = rcall('ZRANGE', KEYS[1], 0, -1)
table.sort(names)
return names
