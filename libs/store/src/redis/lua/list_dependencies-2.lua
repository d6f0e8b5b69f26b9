--[[
  Lists a namespace's dependencies: those used within the registry's retention (forgetting the
  others) and those an operator's forced state keeps listed (forgetting lapsed ones).

  Input:
    KEYS[1] registry sorted set (member: dependency, score: last use in epoch ms)
    KEYS[2] forced sorted set (member: dependency, score: when its forced state lapses, epoch ms)
    ARGV[1] retentionMs

  Output: the names, sorted, each once
]]
local rcall = redis.call
--- @include "clock"

local _, nowMs = serverTime()
rcall('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowMs - tonumber(ARGV[1]))
rcall('ZREMRANGEBYSCORE', KEYS[2], '-inf', nowMs)
local names = rcall('ZRANGE', KEYS[1], 0, -1)
local seen = {}
for _, name in ipairs(names) do
  seen[name] = true
end
for _, name in ipairs(rcall('ZRANGE', KEYS[2], 0, -1)) do
  if not seen[name] then
    names[#names + 1] = name
  end
end
table.sort(names)
return names
