--[[
  Decides one retry against the dependency's fleet-wide budget, and counts it when granted.

  Input:
    KEYS[1] budget window hash
    ARGV[1] ratio
    ARGV[2] minRetriesPerSecond
    ARGV[3] windowSeconds
    ARGV[4] delayMs: the backoff the caller would wait
    ARGV[5] deadlineMs: the caller's remaining deadline, -1 when none

  Output: { code, retries, requests, limit } after the decision
    code 1 granted, 2 budget_exhausted, 3 deadline_exceeded
]]
local rcall = redis.call
--- @include "clock"
--- @include "window"
--- @include "budget"

local key = KEYS[1]
local ratio = tonumber(ARGV[1])
local minRetriesPerSecond = tonumber(ARGV[2])
local windowSeconds = tonumber(ARGV[3])
local delayMs = tonumber(ARGV[4])
local deadlineMs = tonumber(ARGV[5])

local second = serverTime()
local sums = windowSum(key, BUDGET_FIELDS, second, windowSeconds)
local requests, retries = sums[1], sums[2]
local limit = budgetLimit(ratio, minRetriesPerSecond, windowSeconds, requests)

if deadlineMs >= 0 and delayMs > deadlineMs then
  return { 3, retries, requests, limit }
end
if retries + 1 > limit then
  return { 2, retries, requests, limit }
end
windowAdd(key, BUDGET_FIELDS, { 0, 1 }, second, windowSeconds)
return { 1, retries + 1, requests, limit }
