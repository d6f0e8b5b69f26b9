--[[
  Records one reporter's batch for a dependency and runs the breaker on it: first attempts are
  the budget's deposits, retries the reporter made on its own grant are charged to it, and the
  retries that succeeded are counted beside them (an adaptive budget gives their grants back);
  outcomes feed the breaker window; probe outcomes move a half-open breaker; a window over its
  thresholds (with the reporter quorum) opens a closed breaker. Counts the reporters of the budget
  window: each client's share of the fleet is 1 / that count. Writes the batch into the
  dependency's history (history.lua): its outcomes, and the budget and breaker it leaves.

  Input:
    KEYS[1] budget window hash
    KEYS[2] outcome window hash
    KEYS[3] breaker hash
    KEYS[4] failing reporters sorted set (member: reporter, score: last failed or slow call, epoch ms)
    KEYS[5] probe leases sorted set (member: token, score: expiry in epoch ms)
    KEYS[6] latency window hash
    KEYS[7] active reporters sorted set (member: reporter, score: last report, epoch ms)
    KEYS[8] history hash (history.lua)
    ARGV[1] the batch, cjson: { reporter, requests (first attempts), successes, failures, slow,
            retries (made without the fleet's grant; absent: 0), retriesSucceeded (retries
            that succeeded, given back by an adaptive budget; absent: 0), probes = { { token, success }, ... },
            latency = { counts on the fixed bounds } or absent,
            reporters = { { reporter, failing }, ... } for a batch merged from several reports, or
            absent: reporter alone, failing when the batch has failed or slow calls }
    ARGV[2] the policy, cjson: { budgetWindowSeconds, breaker = <breaker policy>,
            budget = { mode, ratio, maxRatio, minRetriesPerSecond }: the budget's rule, for the
            limit and cap the history keeps }
    ARGV[3] event channel
    ARGV[4] dependency name

  Output: reporters in the budget window, <breaker reply tail> after the batch
]]
local rcall = redis.call
-- Most reporters each reporter set holds, the least recent going first (libs/core MAX_REPORTERS).
local MAX_REPORTERS = ${MAX_REPORTERS}
--- @include "clock"
--- @include "window"
--- @include "budget"
--- @include "outcomes"
--- @include "breaker"
--- @include "latency"
--- @include "history"

local batch = cjson.decode(ARGV[1])
local options = cjson.decode(ARGV[2])
local requests, successes, failures, slow = batch.requests, batch.successes, batch.failures, batch.slow
local retries = batch.retries or 0
local retriesSucceeded = batch.retriesSucceeded or 0
-- The reporters this batch counts for (libs/core reportersOf).
local batchReporters = batch.reporters
if batchReporters == nil or #batchReporters == 0 then
  batchReporters = { { reporter = batch.reporter, failing = failures + slow > 0 } }
end
local budgetWindow = options.budgetWindowSeconds
local policy = options.breaker
local outcomeWindow = policy.windowSeconds

local second, nowMs = serverTime()
local breaker = breakerLoad(KEYS[3])
breakerSettle(breaker, nowMs)

-- Probe outcomes: only a live lease counts, and only while half-open.
rcall('ZREMRANGEBYSCORE', KEYS[5], '-inf', nowMs)
for _, probe in ipairs(batch.probes) do
  if breaker.state == 'half_open' and rcall('ZREM', KEYS[5], probe.token) == 1 then
    if probe.success then
      if breaker.successes + 1 >= policy.closeAfterSuccesses then
        breakerMove(breaker, 'closed', nowMs, nil, 0, 0, nil)
      else
        breaker.successes = breaker.successes + 1
      end
    else
      breakerOpen(breaker, policy, nowMs, breaker.opens + 1)
    end
  end
end

if batch.latency and #batch.latency > 0 then
  windowPrune(KEYS[6], LATENCY_FIELDS, second, outcomeWindow)
  windowAdd(KEYS[6], LATENCY_FIELDS, batch.latency, second, outcomeWindow)
end
windowPrune(KEYS[1], BUDGET_FIELDS, second, budgetWindow)
if requests + retries + retriesSucceeded > 0 then
  windowAdd(KEYS[1], BUDGET_FIELDS, { requests, retries, retriesSucceeded }, second, budgetWindow)
end
local entered = #breaker.transitions > 0 and breaker.state
local owedClear = breaker.freshWindow
breaker.freshWindow = false
if entered == 'closed' or entered == 'open' then
  -- A breaker that just closed or reopened starts from a fresh window (latency is kept).
  rcall('DEL', KEYS[2], KEYS[4], KEYS[5])
else
  if owedClear then
    -- It closed (a forced state lapsed) in a script that could not clear the window.
    rcall('DEL', KEYS[2], KEYS[4], KEYS[5])
  end
  windowPrune(KEYS[2], OUTCOME_FIELDS, second, outcomeWindow)
  if successes + failures + slow > 0 then
    windowAdd(KEYS[2], OUTCOME_FIELDS, { successes, failures, slow }, second, outcomeWindow)
  end
  rcall('ZREMRANGEBYSCORE', KEYS[4], '-inf', nowMs - outcomeWindow * 1000)
  local anyFailing = false
  for _, r in ipairs(batchReporters) do
    if r.failing then
      rcall('ZADD', KEYS[4], nowMs, r.reporter)
      anyFailing = true
    end
  end
  if anyFailing then
    rcall('ZREMRANGEBYRANK', KEYS[4], 0, -MAX_REPORTERS - 1)
    rcall('PEXPIRE', KEYS[4], outcomeWindow * 1000 + 2000)
  end
  if breaker.state == 'closed' then
    local sums = windowSum(KEYS[2], OUTCOME_FIELDS, second, outcomeWindow)
    if windowTrips(policy, sums[1], sums[2], sums[3], rcall('ZCARD', KEYS[4])) then
      breakerOpen(breaker, policy, nowMs, 1)
      rcall('DEL', KEYS[2], KEYS[4], KEYS[5])
    end
  end
end

rcall('ZREMRANGEBYSCORE', KEYS[7], '-inf', nowMs - budgetWindow * 1000)
for _, r in ipairs(batchReporters) do
  rcall('ZADD', KEYS[7], nowMs, r.reporter)
end
rcall('ZREMRANGEBYRANK', KEYS[7], 0, -MAX_REPORTERS - 1)
rcall('PEXPIRE', KEYS[7], budgetWindow * 1000 + 2000)
local reporters = rcall('ZCARD', KEYS[7])

local rule = options.budget
local budgetRule = budgetPolicy(rule.mode, rule.ratio, rule.maxRatio, rule.minRetriesPerSecond, budgetWindow)
-- The budget window was pruned at this second above.
local counts = windowTotals(KEYS[1], BUDGET_FIELDS)
historyRecord(KEYS[8], second, successes, failures, slow, {
  counts[2], counts[3], counts[1], budgetPolicyLimit(budgetRule, counts[1]), budgetCap(budgetRule, counts[1]), budgetWindow,
}, breaker.state)

if #breaker.transitions > 0 or breaker.state == 'half_open' or breaker.clamped or owedClear then
  breakerSave(KEYS[3], breaker, nowMs)
end
breakerPublish(ARGV[3], ARGV[4], breaker)
return breakerReply(breaker, { reporters })
