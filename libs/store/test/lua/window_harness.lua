--[[
  Test only (never loaded by the store): drives includes/window.lua and includes/budget.lua with
  explicit seconds, so a test can walk the window's edges without waiting on TIME.

  Input:
    KEYS[1] a window hash (fields rq, rt as the budget's)
    ARGV[1] the steps, cjson: a list of
            { 'add', second, windowSeconds, requests, retries }  prune, then add (as the scripts do)
            { 'sum', second, windowSeconds }                     the totals after a prune
            { 'limit', ratio, minRetriesPerSecond, windowSeconds, requests }  budgetLimit

  Output: a flat list: requests and retries for each 'sum', the limit for each 'limit'
]]
local rcall = redis.call
--- @include "window"
--- @include "budget"

local out = {}
for _, step in ipairs(cjson.decode(ARGV[1])) do
  if step[1] == 'add' then
    windowPrune(KEYS[1], BUDGET_FIELDS, step[2], step[3])
    windowAdd(KEYS[1], BUDGET_FIELDS, { step[4], step[5] }, step[2], step[3])
  elseif step[1] == 'sum' then
    local sums = windowSum(KEYS[1], BUDGET_FIELDS, step[2], step[3])
    out[#out + 1] = sums[1]
    out[#out + 1] = sums[2]
  else
    out[#out + 1] = budgetLimit(step[2], step[3], step[4], step[5])
  end
end
return out
