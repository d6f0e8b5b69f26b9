--[[
  Keeps a dependency listed while an operator's forced state lasts, however long nobody uses it
  (the registry forgets a name unused for its retention): a member of the namespace's forced set,
  scored by when the state lapses (+inf until reset). Any other state takes it out. The set lives
  as long as its latest member: for good while one is forced until reset.

  Input:
    KEYS[1] forced sorted set (member: dependency, score: when its forced state lapses, epoch ms)
    ARGV[1] dependency name
    ARGV[2] forced: 1 for a forced state, 0 for any other
    ARGV[3] openUntil of the forced state (epoch ms), -1 for until reset

  Output: 1 when the dependency is kept listed, 0 when not
]]
local rcall = redis.call
--- @include "clock"

local key = KEYS[1]
local name = ARGV[1]
local openUntil = tonumber(ARGV[3])

local _, nowMs = serverTime()
rcall('ZREMRANGEBYSCORE', key, '-inf', nowMs)
local kept = ARGV[2] == '1' and (openUntil < 0 or openUntil > nowMs)
if kept then
  rcall('ZADD', key, openUntil < 0 and '+inf' or openUntil, name)
else
  rcall('ZREM', key, name)
end
local latest = rcall('ZRANGE', key, -1, -1, 'WITHSCORES')
if #latest > 0 then
  if latest[2] == 'inf' then
    rcall('PERSIST', key)
  else
    rcall('PEXPIREAT', key, tonumber(latest[2]))
  end
end
return kept and 1 or 0
