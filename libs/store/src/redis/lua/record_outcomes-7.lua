--[[
  Records one reporter's batch for a dependency and runs the breaker on it: first attempts are
  the budget's deposits, and retries the reporter made on its own grant are charged to it;
  outcomes feed the breaker window; probe outcomes move a half-open breaker; a window over its
  thresholds (with the reporter quorum) opens a closed breaker. Counts the reporters of the budget
  window: each client's share of the fleet is 1 / that count.

  Input:
    KEYS[1] budget window hash
    KEYS[2] outcome window hash
    KEYS[3] breaker hash
    KEYS[4] failing reporters sorted set (member: reporter, score: last failed or slow call, epoch ms)
    KEYS[5] probe leases sorted set (member: token, score: expiry in epoch ms)
    KEYS[6] latency window hash
    KEYS[7] active reporters sorted set (member: reporter, score: last report, epoch ms)
    ARGV[1] requests (first attempts)
    ARGV[2] successes
    ARGV[3] failures
    ARGV[4] slow
    ARGV[5] budget windowSeconds
    ARGV[6] reporter
    ARGV[7] event channel
    ARGV[8] dependency name
    ARGV[9..18] breaker policy (BREAKER_POLICY_ARGS order)
    ARGV[19] retries made without the fleet's grant
    ARGV[20] n: how many latency counts follow (0, or one per fixed bucket)
    ARGV[21..20+n] latency counts on the fixed bounds
    ARGV[21+n..] probe outcomes as token, success (1 or 0) pairs

  Output: reporters in the budget window, <breaker reply tail> after the batch
]]
local rcall = redis.call
--- @include "clock"
--- @include "window"
--- @include "budget"
--- @include "outcomes"
--- @include "breaker"
--- @include "latency"

local requests = tonumber(ARGV[1])
local successes = tonumber(ARGV[2])
local failures = tonumber(ARGV[3])
local slow = tonumber(ARGV[4])
local budgetWindow = tonumber(ARGV[5])
local reporter = ARGV[6]
local policy = breakerPolicy(9)
local outcomeWindow = policy.windowSeconds
local retries = tonumber(ARGV[19])
local latencyCount = tonumber(ARGV[20])
local firstProbe = 21 + latencyCount

local second, nowMs = serverTime()
local breaker = breakerLoad(KEYS[3])
breakerSettle(breaker, nowMs)

-- Probe outcomes: only a live lease counts, and only while half-open.
rcall('ZREMRANGEBYSCORE', KEYS[5], '-inf', nowMs)
for i = firstProbe, #ARGV, 2 do
  if breaker.state == 'half_open' and rcall('ZREM', KEYS[5], ARGV[i]) == 1 then
    if ARGV[i + 1] == '1' then
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

if latencyCount > 0 then
  local counts = {}
  for i = 1, latencyCount do
    counts[i] = tonumber(ARGV[20 + i])
  end
  windowPrune(KEYS[6], LATENCY_FIELDS, second, outcomeWindow)
  windowAdd(KEYS[6], LATENCY_FIELDS, counts, second, outcomeWindow)
end
windowPrune(KEYS[1], BUDGET_FIELDS, second, budgetWindow)
if requests + retries > 0 then
  windowAdd(KEYS[1], BUDGET_FIELDS, { requests, retries }, second, budgetWindow)
end
local entered = #breaker.transitions > 0 and breaker.state
if entered == 'closed' or entered == 'open' then
  -- A breaker that just closed or reopened starts from a fresh window (latency is kept).
  rcall('DEL', KEYS[2], KEYS[4], KEYS[5])
else
  windowPrune(KEYS[2], OUTCOME_FIELDS, second, outcomeWindow)
  if successes + failures + slow > 0 then
    windowAdd(KEYS[2], OUTCOME_FIELDS, { successes, failures, slow }, second, outcomeWindow)
  end
  rcall('ZREMRANGEBYSCORE', KEYS[4], '-inf', nowMs - outcomeWindow * 1000)
  if failures + slow > 0 then
    rcall('ZADD', KEYS[4], nowMs, reporter)
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
rcall('ZADD', KEYS[7], nowMs, reporter)
rcall('PEXPIRE', KEYS[7], budgetWindow * 1000 + 2000)
local reporters = rcall('ZCARD', KEYS[7])

if #breaker.transitions > 0 or breaker.state == 'half_open' then
  breakerSave(KEYS[3], breaker, nowMs)
end
breakerPublish(ARGV[7], ARGV[8], breaker)
return breakerReply(breaker, { reporters })
