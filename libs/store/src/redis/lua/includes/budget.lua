-- Budget math; twin of libs/core retry-budget.ts, in integers: floor(ratio * requests +
-- minRetriesPerSecond * windowSeconds) with ratio and minRetriesPerSecond counted in millionths
-- and requests split at a million, so no product passes 2^53 and floor() never meets a binary
-- fraction (0.29 * 100 is 28.999999999999996). The window counts first attempts (rq), retries
-- (rt) and the retries that succeeded (rs).
local BUDGET_FIELDS = { 'rq', 'rt', 'rs' }
local BUDGET_SCALE = 1000000

local function budgetLimit(ratio, minRetriesPerSecond, windowSeconds, requests)
  local perMillion = math.floor(ratio * BUDGET_SCALE + 0.5)
  local floorMillionths = math.floor(minRetriesPerSecond * BUDGET_SCALE + 0.5) * windowSeconds
  local millions = math.floor(requests / BUDGET_SCALE)
  local rest = requests - millions * BUDGET_SCALE
  return perMillion * millions + math.floor((perMillion * rest + floorMillionths) / BUDGET_SCALE)
end

--[[
  A budget policy as the scripts pass it: { adaptive (boolean), ratio, maxRatio, minRetriesPerSecond,
  windowSeconds }, from the ARGV strings (mode 'adaptive' or 'fixed').
]]
local function budgetPolicy(mode, ratio, maxRatio, minRetriesPerSecond, windowSeconds)
  return {
    adaptive = mode == 'adaptive',
    ratio = tonumber(ratio),
    maxRatio = tonumber(maxRatio),
    minRetriesPerSecond = tonumber(minRetriesPerSecond),
    windowSeconds = tonumber(windowSeconds),
  }
end

local function budgetPolicyLimit(b, requests)
  return budgetLimit(b.ratio, b.minRetriesPerSecond, b.windowSeconds, requests)
end

-- The most retries the window holds however many succeed: maxRatio's allowance (never below
-- ratio's) under an adaptive budget, the limit under a fixed one.
local function budgetCap(b, requests)
  if not b.adaptive then
    return budgetPolicyLimit(b, requests)
  end
  return budgetLimit(math.max(b.maxRatio, b.ratio), b.minRetriesPerSecond, b.windowSeconds, requests)
end

-- True when one more retry fits (libs/core retryFits): fixed, retries + 1 <= limit; adaptive,
-- max(retries - succeeded, 0) + 1 <= limit and retries + 1 <= cap.
local function budgetFits(b, requests, retries, succeeded)
  if not b.adaptive then
    return retries + 1 <= budgetPolicyLimit(b, requests)
  end
  return math.max(retries - succeeded, 0) + 1 <= budgetPolicyLimit(b, requests)
    and retries + 1 <= budgetCap(b, requests)
end
