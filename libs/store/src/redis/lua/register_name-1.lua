--[[
  Registers a name in a capped registry (a namespace in the deployment; a dependency's twin, which
  also tracks its callers, is register_dependency-2.lua), refusing a new one past the cap. Names unused for the retention period are
  forgotten and free their place.

  Input:
    KEYS[1] registry sorted set (member: name, score: last use in epoch ms)
    ARGV[1] name
    ARGV[2] cap: most distinct names
    ARGV[3] retentionMs
    ARGV[4] event channel told when a dependency is new; '' to tell nobody

  Output: 1 registered (or already known), 0 refused: the registry is at its cap
]]
local rcall = redis.call
--- @include "clock"

local key = KEYS[1]
local name = ARGV[1]
local cap = tonumber(ARGV[2])
local retentionMs = tonumber(ARGV[3])

local _, nowMs = serverTime()
rcall('ZREMRANGEBYSCORE', key, '-inf', nowMs - retentionMs)
if rcall('ZSCORE', key, name) == false and rcall('ZCARD', key) >= cap then
  return 0
end
if rcall('ZADD', key, nowMs, name) == 1 and ARGV[4] ~= '' then
  rcall('SPUBLISH', ARGV[4], cjson.encode({ type = 'dependency', dep = name }))
end
rcall('PEXPIRE', key, retentionMs)
return 1
