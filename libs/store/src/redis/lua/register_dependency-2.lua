--[[
  Registers a use of a dependency in its namespace's capped registry, refusing a new one past the
  cap, and says whether a caller had used it before. A caller's use (a report, a retry, an
  admission) is also noted in the namespace's callers; an operator's (a trip, a policy) is not.
  Names unused for the retention period are forgotten from both and free their place.

  Input:
    KEYS[1] registry sorted set (member: dependency, score: last use in epoch ms)
    KEYS[2] callers sorted set (member: dependency, score: last use by a caller in epoch ms)
    ARGV[1] dependency name
    ARGV[2] cap: most distinct dependencies
    ARGV[3] retentionMs
    ARGV[4] namespace event channel, told when a dependency is new
    ARGV[5] by: caller or operator

  Output: 0 refused (the registry is at its cap), 1 registered and called before, 2 registered and
  never called within the retention
]]
local rcall = redis.call
--- @include "clock"

local registry, callers = KEYS[1], KEYS[2]
local name = ARGV[1]
local cap = tonumber(ARGV[2])
local retentionMs = tonumber(ARGV[3])

local _, nowMs = serverTime()
rcall('ZREMRANGEBYSCORE', registry, '-inf', nowMs - retentionMs)
rcall('ZREMRANGEBYSCORE', callers, '-inf', nowMs - retentionMs)
if rcall('ZSCORE', registry, name) == false and rcall('ZCARD', registry) >= cap then
  return 0
end
if rcall('ZADD', registry, nowMs, name) == 1 then
  rcall('SPUBLISH', ARGV[4], cjson.encode({ type = 'dependency', dep = name }))
end
rcall('PEXPIRE', registry, retentionMs)
local called = rcall('ZSCORE', callers, name) ~= false
if ARGV[5] == 'caller' then
  rcall('ZADD', callers, nowMs, name)
  rcall('PEXPIRE', callers, retentionMs)
end
if called then return 1 end
return 2
