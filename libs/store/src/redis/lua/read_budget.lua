--[[
  Reads a dependency's retry budget over its window (pruning buckets that aged out).

  Input:
    KEYS[1] budget window hash
    ARGV[1] ratio
    ARGV[2] minRetriesPerSecond
    ARGV[3] windowSeconds

  Output: { retries, requests, limit }
]]
local rcall = redis.call
--- @include "clock"
--- @include "window"
--- @include "budget"

local ratio = tonumber(ARGV[1])
local minRetriesPerSecond = tonumber(ARGV[2])
local windowSeconds = tonumber(ARGV[3])

local second = serverTime()
local sums = windowSum(KEYS[1], BUDGET_FIELDS, second, windowSeconds)
return { sums[2], sums[1], budgetLimit(ratio, minRetriesPerSecond, windowSeconds, sums[1]) }
