--[[
  Reads a dependency's retry budget and outcome totals over their windows (pruning buckets
  that aged out).

  Input:
    KEYS[1] budget window hash
    KEYS[2] outcome window hash
    ARGV[1] ratio
    ARGV[2] minRetriesPerSecond
    ARGV[3] budget windowSeconds
    ARGV[4] outcome windowSeconds

  Output: { retries, requests, limit, successes, failures, slow }
]]
local rcall = redis.call
--- @include "clock"
--- @include "window"
--- @include "budget"
--- @include "outcomes"

local ratio = tonumber(ARGV[1])
local minRetriesPerSecond = tonumber(ARGV[2])
local budgetWindow = tonumber(ARGV[3])
local outcomeWindow = tonumber(ARGV[4])

local second = serverTime()
local budget = windowSum(KEYS[1], BUDGET_FIELDS, second, budgetWindow)
local outcomes = windowSum(KEYS[2], OUTCOME_FIELDS, second, outcomeWindow)
return {
  budget[2], budget[1], budgetLimit(ratio, minRetriesPerSecond, budgetWindow, budget[1]),
  outcomes[1], outcomes[2], outcomes[3],
}
