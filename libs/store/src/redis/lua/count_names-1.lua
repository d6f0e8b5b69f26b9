--[[
  Counts the names in a registry (the dependencies of a namespace), forgetting those unused for
  the retention, as list_names-1.lua does.

  Input:
    KEYS[1] registry sorted set
    ARGV[1] retentionMs

  Output: how many names it holds
]]
local rcall = redis.call
--- @include "clock"

local _, nowMs = serverTime()
rcall('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowMs - tonumber(ARGV[1]))
return rcall('ZCARD', KEYS[1])
