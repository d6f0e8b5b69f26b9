--[[
  Reads a dependency: its retry budget, its outcome totals, its reporters in the budget window, the
  concurrency leases held and what is left of its rate limit's burst, its latency histogram and its
  breaker (settling time-based transitions and pruning buckets that aged out).

  Input:
    KEYS[1] budget window hash
    KEYS[2] outcome window hash
    KEYS[3] breaker hash
    KEYS[4] latency window hash
    KEYS[5] active reporters sorted set (member: reporter, score: last report, epoch ms)
    KEYS[6] rate limit TAT string
    KEYS[7] concurrency leases sorted set (member: lease id, score: expiry in epoch ms)
    ARGV[1] ratio
    ARGV[2] minRetriesPerSecond
    ARGV[3] budget windowSeconds
    ARGV[4] outcome windowSeconds
    ARGV[5] event channel
    ARGV[6] dependency name
    ARGV[7] the rate limit policy, cjson { rate, periodMs, burst }; '' without one
    ARGV[8] budget mode, 'adaptive' or 'fixed'
    ARGV[9] maxRatio (adaptive only)

  Output: { retries, retriesSucceeded, requests, limit, cap, successes, failures, slow, reporters, leases held,
    rate burst left (-1 without a rate limit), <one count per latency bucket>, <breaker reply tail> }
]]
local rcall = redis.call
--- @include "clock"
--- @include "window"
--- @include "budget"
--- @include "outcomes"
--- @include "breaker"
--- @include "latency"
--- @include "gcra"

local budgetPolicyNow = budgetPolicy(ARGV[8], ARGV[1], ARGV[9], ARGV[2], ARGV[3])
local budgetWindow = budgetPolicyNow.windowSeconds
local outcomeWindow = tonumber(ARGV[4])

local second, nowMs = serverTime()
local breaker = breakerNow(KEYS[3], nowMs, ARGV[5], ARGV[6])
local budget = windowSum(KEYS[1], BUDGET_FIELDS, second, budgetWindow)
-- A window owed a clear (a forced state lapsed) holds nothing that counts.
local outcomes = breaker.freshWindow and { 0, 0, 0 } or windowSum(KEYS[2], OUTCOME_FIELDS, second, outcomeWindow)
-- Those that reported within the budget window (record_outcomes forgets the older ones).
local reporters = rcall('ZCOUNT', KEYS[5], '(' .. (nowMs - budgetWindow * 1000), '+inf')
local leases = rcall('ZCOUNT', KEYS[7], '(' .. nowMs, '+inf')
local rateLeft = -1
if ARGV[7] ~= '' then
  local rate = cjson.decode(ARGV[7])
  local backlog = gcraBacklog(rate, rcall('GET', KEYS[6]), nowMs)
  rateLeft = math.floor((rate.periodMs * rate.burst - backlog) / rate.periodMs)
end
local reply = {
  budget[2], budget[3], budget[1], budgetPolicyLimit(budgetPolicyNow, budget[1]), budgetCap(budgetPolicyNow, budget[1]),
  outcomes[1], outcomes[2], outcomes[3], reporters, leases, rateLeft,
}
for _, count in ipairs(windowSum(KEYS[4], LATENCY_FIELDS, second, outcomeWindow)) do
  reply[#reply + 1] = count
end
return breakerReply(breaker, reply)
