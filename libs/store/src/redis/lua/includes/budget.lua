-- Budget math; twin of libs/core retryBudgetLimit, in integers: floor(ratio * requests +
-- minRetriesPerSecond * windowSeconds) with ratio and minRetriesPerSecond counted in millionths
-- and requests split at a million, so no product passes 2^53 and floor() never meets a binary
-- fraction (0.29 * 100 is 28.999999999999996).
local BUDGET_FIELDS = { 'rq', 'rt' }
local BUDGET_SCALE = 1000000

local function budgetLimit(ratio, minRetriesPerSecond, windowSeconds, requests)
  local perMillion = math.floor(ratio * BUDGET_SCALE + 0.5)
  local floorMillionths = math.floor(minRetriesPerSecond * BUDGET_SCALE + 0.5) * windowSeconds
  local millions = math.floor(requests / BUDGET_SCALE)
  local rest = requests - millions * BUDGET_SCALE
  return perMillion * millions + math.floor((perMillion * rest + floorMillionths) / BUDGET_SCALE)
end
