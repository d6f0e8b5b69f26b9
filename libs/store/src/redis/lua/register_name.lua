--[[
  Registers a dependency in its namespace, refusing a new one past the namespace's cap.
  Dependencies unused for the retention period are forgotten and free their place.

  Input:
    KEYS[1] namespace dependency sorted set (member: dependency, score: last use in epoch ms)
    ARGV[1] dependency
    ARGV[2] cap: most distinct dependencies
    ARGV[3] retentionMs
    ARGV[4] namespace event channel, told when a dependency is new

  Output: 1 registered (or already known), 0 refused: the namespace is at its cap
]]
local rcall = redis.call
--- @include "clock"

local key = KEYS[1]
local dependency = ARGV[1]
local cap = tonumber(ARGV[2])
local retentionMs = tonumber(ARGV[3])

local _, nowMs = serverTime()
rcall('ZREMRANGEBYSCORE', key, '-inf', nowMs - retentionMs)
if rcall('ZSCORE', key, dependency) == false and rcall('ZCARD', key) >= cap then
  return 0
end
if rcall('ZADD', key, nowMs, dependency) == 1 then
  rcall('SPUBLISH', ARGV[4], cjson.encode({ type = 'dependency', dep = dependency }))
end
rcall('PEXPIRE', key, retentionMs)
return 1
