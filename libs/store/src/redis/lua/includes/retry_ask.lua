--[[
  One retry ask, as decide_retry-4.lua and decide_retries-N.lua decide it, so a batch answers
  exactly what the same asks one by one would: the kept grant of a repeated request id; else the
  breaker, the deadline (the delay plus the fleet's p99 must fit in it), then the budget
  (budgetFits). A grant is counted and, with a request id, kept (fields rt, rs, rq, lim, cap, d:
  the budget after it and its delay).

  `dep` is the dependency as the script sees it: budgetKey, latencyKey, budget (budgetPolicy's
  table), windowSeconds, latencyWindowSeconds, keepMs, second, nowMs and breaker (breakerNow's);
  the function caches the window's sums and p99 in it between asks. deadlineMs is nil when the
  caller has none; a negative one has passed.
  Returns { code, retries, retriesSucceeded, requests, limit, cap, delayMs, retryAfterMs (-1: none
  or unknown) }.

  retryBudgetRead(dep) answers an ask decided before the store (not_retriable, max_attempts, …):
  { 0, retries, retriesSucceeded, requests, limit, cap, 0, -1 }, the budget as
  read_dependency-7.lua would read it now.

  retryDependency(...) builds `dep` from the keys of the budget window, the breaker and the latency
  window, and the policy arguments, which each script passes from its own KEYS and ARGV.
]]
--- @include "codes"
--- @include "clock"
--- @include "window"
--- @include "budget"
--- @include "breaker"
--- @include "latency"
--- @include "retry_after"

local function retryDependency(budgetKey, breakerKey, latencyKey, budget, latencyWindowSeconds, keepMs, channel, name)
  local second, nowMs = serverTime()
  return {
    budgetKey = budgetKey,
    latencyKey = latencyKey,
    budget = budget,
    windowSeconds = budget.windowSeconds,
    latencyWindowSeconds = tonumber(latencyWindowSeconds),
    keepMs = tonumber(keepMs),
    second = second,
    nowMs = nowMs,
    breaker = breakerNow(breakerKey, nowMs, channel, name),
  }
end

local function retryBudgetSums(dep)
  if not dep.sums then
    dep.sums = windowSum(dep.budgetKey, BUDGET_FIELDS, dep.second, dep.windowSeconds)
  end
  return dep.sums
end

local function retryBudgetRead(dep)
  local sums = retryBudgetSums(dep)
  return { 0, sums[2], sums[3], sums[1], budgetPolicyLimit(dep.budget, sums[1]), budgetCap(dep.budget, sums[1]), 0, -1 }
end

local function retryAsk(dep, delayMs, deadlineMs, requestId, requestKey)
  if requestId ~= '' then
    local kept = rcall('HMGET', requestKey, 'rt', 'rs', 'rq', 'lim', 'cap', 'd')
    if kept[1] then
      -- A grant kept before the budget had rs and cap: none succeeded, the cap was the limit.
      local rs, cap = tonumber(kept[2]) or 0, tonumber(kept[5]) or tonumber(kept[4])
      return { CODE.granted, tonumber(kept[1]), rs, tonumber(kept[3]), tonumber(kept[4]), cap, tonumber(kept[6]), -1 }
    end
  end
  local sums = retryBudgetSums(dep)
  local requests, retries, succeeded = sums[1], sums[2], sums[3]
  local limit, cap = budgetPolicyLimit(dep.budget, requests), budgetCap(dep.budget, requests)
  local code, retryAfterMs = CODE.granted, -1
  if blocksCalls(dep.breaker.state) then
    code = CODE.breaker_open
    if dep.breaker.openUntil then
      retryAfterMs = math.max(dep.breaker.openUntil - dep.nowMs, 0)
    end
  else
    if deadlineMs ~= nil and not dep.p99 then
      -- The fleet's p99 latency over the breaker window; 0 while nothing is known.
      local sums = windowSum(dep.latencyKey, LATENCY_FIELDS, dep.second, dep.latencyWindowSeconds)
      dep.p99 = latencyQuantile(sums, 0.99) or 0
    end
    if deadlineMs ~= nil and delayMs + dep.p99 > deadlineMs then
      code = CODE.deadline_exceeded
    elseif not budgetFits(dep.budget, requests, retries, succeeded) then
      code = CODE.budget_exhausted
      if not dep.budgetRetryAfterMs then
        dep.budgetRetryAfterMs = budgetRetryAfterMs(dep.budgetKey, dep.budget, dep.second, dep.nowMs)
      end
      retryAfterMs = dep.budgetRetryAfterMs
    else
      windowAdd(dep.budgetKey, BUDGET_FIELDS, { 0, 1, 0 }, dep.second, dep.windowSeconds)
      retries = retries + 1
      dep.sums[2] = retries
      dep.budgetRetryAfterMs = nil
      if requestId ~= '' then
        rcall('HSET', requestKey, 'rt', retries, 'rs', succeeded, 'rq', requests, 'lim', limit, 'cap', cap, 'd', delayMs)
        rcall('PEXPIRE', requestKey, dep.keepMs)
      end
    end
  end
  return { code, retries, succeeded, requests, limit, cap, delayMs, retryAfterMs }
end
