--[[
  Records one reporter's batch of outcomes for a dependency: first attempts are the budget's
  deposits; successes, failures and slow calls feed the outcome window.

  Input:
    KEYS[1] budget window hash
    KEYS[2] outcome window hash
    ARGV[1] requests (first attempts)
    ARGV[2] successes
    ARGV[3] failures
    ARGV[4] slow
    ARGV[5] budget windowSeconds
    ARGV[6] outcome windowSeconds

  Output: { requests, successes, failures, slow } in the outcome window after the batch
]]
local rcall = redis.call
--- @include "clock"
--- @include "window"
--- @include "budget"
--- @include "outcomes"

local requests = tonumber(ARGV[1])
local successes = tonumber(ARGV[2])
local failures = tonumber(ARGV[3])
local slow = tonumber(ARGV[4])
local budgetWindow = tonumber(ARGV[5])
local outcomeWindow = tonumber(ARGV[6])

local second = serverTime()
windowPrune(KEYS[1], BUDGET_FIELDS, second, budgetWindow)
if requests > 0 then
  windowAdd(KEYS[1], BUDGET_FIELDS, { requests, 0 }, second, budgetWindow)
end
windowPrune(KEYS[2], OUTCOME_FIELDS, second, outcomeWindow)
if successes + failures + slow > 0 then
  windowAdd(KEYS[2], OUTCOME_FIELDS, { successes, failures, slow }, second, outcomeWindow)
end
local sums = windowSum(KEYS[2], OUTCOME_FIELDS, second, outcomeWindow)
return { sums[1], sums[2], sums[3] }
