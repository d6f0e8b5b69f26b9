--[[
  Lists the names in a registry (the dependencies of a namespace, the namespaces of the
  deployment), forgetting those unused for the retention.

  Input:
    KEYS[1] registry sorted set
    ARGV[1] retentionMs

  Output: the names, sorted
]]
local rcall = redis.call
--- @include "clock"

local _, nowMs = serverTime()
rcall('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowMs - tonumber(ARGV[1]))
local names = rcall('ZRANGE', KEYS[1], 0, -1)
table.sort(names)
return names
