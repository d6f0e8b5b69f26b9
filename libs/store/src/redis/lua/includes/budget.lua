-- Budget math; twin of libs/core retryBudgetLimit. The epsilon guards floor() against binary
-- fractions (0.29 * 100 is 28.999999999999996).
local BUDGET_FIELDS = { 'rq', 'rt' }

local function budgetLimit(ratio, minRetriesPerSecond, windowSeconds, requests)
  return math.floor(ratio * requests + minRetriesPerSecond * windowSeconds + 1e-9)
end
