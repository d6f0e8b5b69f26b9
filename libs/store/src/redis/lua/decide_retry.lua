--[[
  Decides one retry: the breaker first, then the deadline (the delay plus the fleet's p99 must
  fit in it), then the dependency's fleet-wide budget, and counts the retry when granted.

  Input:
    KEYS[1] budget window hash
    KEYS[2] breaker hash
    KEYS[3] latency window hash
    ARGV[1] ratio
    ARGV[2] minRetriesPerSecond
    ARGV[3] windowSeconds
    ARGV[4] delayMs: the backoff the caller would wait
    ARGV[5] deadlineMs: the caller's remaining deadline, -1 when none
    ARGV[6] event channel
    ARGV[7] dependency name
    ARGV[8] latency windowSeconds (the breaker window)

  Output: { code, retries, requests, limit, <breaker reply tail> } after the decision
    code 1 granted, 2 budget_exhausted, 3 deadline_exceeded, 4 breaker_open
]]
local rcall = redis.call
--- @include "clock"
--- @include "window"
--- @include "budget"
--- @include "breaker"
--- @include "latency"

local key = KEYS[1]
local ratio = tonumber(ARGV[1])
local minRetriesPerSecond = tonumber(ARGV[2])
local windowSeconds = tonumber(ARGV[3])
local delayMs = tonumber(ARGV[4])
local deadlineMs = tonumber(ARGV[5])

local second, nowMs = serverTime()
local breaker = breakerNow(KEYS[2], nowMs, ARGV[6], ARGV[7])

local sums = windowSum(key, BUDGET_FIELDS, second, windowSeconds)
local requests, retries = sums[1], sums[2]
local limit = budgetLimit(ratio, minRetriesPerSecond, windowSeconds, requests)

-- The fleet's p99 latency over the breaker window; 0 while nothing is known.
local function fleetP99()
  return latencyQuantile(windowSum(KEYS[3], LATENCY_FIELDS, second, tonumber(ARGV[8])), 0.99) or 0
end

local code = 1
if blocksCalls(breaker.state) then
  code = 4
elseif deadlineMs >= 0 and delayMs + fleetP99() > deadlineMs then
  code = 3
elseif retries + 1 > limit then
  code = 2
else
  windowAdd(key, BUDGET_FIELDS, { 0, 1 }, second, windowSeconds)
  retries = retries + 1
end
return breakerReply(breaker, { code, retries, requests, limit })
