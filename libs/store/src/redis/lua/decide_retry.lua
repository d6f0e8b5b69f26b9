--[[
  Decides one retry: the breaker first, then the deadline, then the dependency's fleet-wide
  budget, and counts the retry when granted.

  Input:
    KEYS[1] budget window hash
    KEYS[2] breaker hash
    ARGV[1] ratio
    ARGV[2] minRetriesPerSecond
    ARGV[3] windowSeconds
    ARGV[4] delayMs: the backoff the caller would wait
    ARGV[5] deadlineMs: the caller's remaining deadline, -1 when none
    ARGV[6] event channel
    ARGV[7] dependency name

  Output: { code, retries, requests, limit, <breaker reply tail> } after the decision
    code 1 granted, 2 budget_exhausted, 3 deadline_exceeded, 4 breaker_open
]]
local rcall = redis.call
--- @include "clock"
--- @include "window"
--- @include "budget"
--- @include "breaker"

local key = KEYS[1]
local ratio = tonumber(ARGV[1])
local minRetriesPerSecond = tonumber(ARGV[2])
local windowSeconds = tonumber(ARGV[3])
local delayMs = tonumber(ARGV[4])
local deadlineMs = tonumber(ARGV[5])

local second, nowMs = serverTime()
local breaker = breakerLoad(KEYS[2])
breakerSettle(breaker, nowMs)
if #breaker.transitions > 0 then
  breakerSave(KEYS[2], breaker, nowMs)
  breakerPublish(ARGV[6], ARGV[7], breaker)
end

local sums = windowSum(key, BUDGET_FIELDS, second, windowSeconds)
local requests, retries = sums[1], sums[2]
local limit = budgetLimit(ratio, minRetriesPerSecond, windowSeconds, requests)

local code = 1
if blocksCalls(breaker.state) then
  code = 4
elseif deadlineMs >= 0 and delayMs > deadlineMs then
  code = 3
elseif retries + 1 > limit then
  code = 2
else
  windowAdd(key, BUDGET_FIELDS, { 0, 1 }, second, windowSeconds)
  retries = retries + 1
end
return breakerReply(breaker, { code, retries, requests, limit })
