--[[
  Test only (never loaded by the store): drives includes/window.lua, includes/budget.lua and
  includes/retry_after.lua with explicit seconds, so a test can walk the window's edges without
  waiting on TIME.

  Input:
    KEYS[1] a window hash (fields rq, rt, rs as the budget's)
    ARGV[1] the steps, cjson: a list of
            { 'add', second, windowSeconds, requests, retries[, retriesSucceeded] }  prune, then add
                                                                 (as the scripts do)
            { 'sum', second, windowSeconds }                     the totals after a prune
            { 'limit', ratio, minRetriesPerSecond, windowSeconds, requests }  budgetLimit
            { 'ask', nowMs, mode, ratio, maxRatio, minRetriesPerSecond, windowSeconds }  the budget
                                                                 as an ask at nowMs meets it

  Output: a flat list: requests and retries for each 'sum', the limit for each 'limit'; for each
    'ask': retriesSucceeded, limit, cap, 1 if one more retry fits (else 0), and budgetRetryAfterMs
    when it does not (-1 when it fits)
]]
local rcall = redis.call
--- @include "window"
--- @include "budget"
--- @include "retry_after"

local out = {}
for _, step in ipairs(cjson.decode(ARGV[1])) do
  if step[1] == 'add' then
    windowPrune(KEYS[1], BUDGET_FIELDS, step[2], step[3])
    windowAdd(KEYS[1], BUDGET_FIELDS, { step[4], step[5], step[6] or 0 }, step[2], step[3])
  elseif step[1] == 'sum' then
    local sums = windowSum(KEYS[1], BUDGET_FIELDS, step[2], step[3])
    out[#out + 1] = sums[1]
    out[#out + 1] = sums[2]
  elseif step[1] == 'limit' then
    out[#out + 1] = budgetLimit(step[2], step[3], step[4], step[5])
  else
    local b = budgetPolicy(step[3], step[4], step[5], step[6], step[7])
    local second = math.floor(step[2] / 1000)
    local sums = windowSum(KEYS[1], BUDGET_FIELDS, second, b.windowSeconds)
    local fits = budgetFits(b, sums[1], sums[2], sums[3])
    out[#out + 1] = sums[3]
    out[#out + 1] = budgetPolicyLimit(b, sums[1])
    out[#out + 1] = budgetCap(b, sums[1])
    out[#out + 1] = fits and 1 or 0
    out[#out + 1] = fits and -1 or budgetRetryAfterMs(KEYS[1], b, second, step[2])
  end
end
return out
