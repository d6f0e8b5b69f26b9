--[[
  Decides one retry: the breaker first, then the deadline (the delay plus the fleet's p99 must
  fit in it), then the dependency's fleet-wide budget, and counts the retry when granted.

  With a caller-chosen request id, a grant is kept in KEYS[4] (fields rt, rq, lim, d: the budget
  after it and its delay) for ARGV[10] ms (at least 60 s and the budget window: as long as a caller
  could ask again), and a repeat with that id answers the kept grant, counting no second retry.
  A denial changed nothing and is not kept: a repeat of one is decided again.

  Input:
    KEYS[1] budget window hash
    KEYS[2] breaker hash
    KEYS[3] latency window hash
    KEYS[4] the request id's grant hash (never touched when ARGV[9] is '')
    ARGV[1] ratio
    ARGV[2] minRetriesPerSecond
    ARGV[3] windowSeconds
    ARGV[4] delayMs: the backoff the caller would wait
    ARGV[5] deadlineMs: the caller's remaining deadline, -1 when none
    ARGV[6] event channel
    ARGV[7] dependency name
    ARGV[8] latency windowSeconds (the breaker window)
    ARGV[9] request id, '' when none
    ARGV[10] how long a grant is kept for a repeat, ms
  (Flat numbers, not a cjson policy: three budget numbers, on the hottest path, which
  test/bench/decisions.mjs also calls with EVALSHA.)

  Output: { code, retries, requests, limit, delayMs, <breaker reply tail> } after the decision
    code CODE.granted, CODE.budget_exhausted, CODE.deadline_exceeded or CODE.breaker_open; for a
    repeat of a kept grant: CODE.granted and the kept budget and delay, with the breaker as it is now
]]
local rcall = redis.call
--- @include "codes"
--- @include "clock"
--- @include "window"
--- @include "budget"
--- @include "breaker"
--- @include "latency"

local key = KEYS[1]
local ratio = tonumber(ARGV[1])
local minRetriesPerSecond = tonumber(ARGV[2])
local windowSeconds = tonumber(ARGV[3])
local delayMs = tonumber(ARGV[4])
local deadlineMs = tonumber(ARGV[5])

local requestId, requestKey = ARGV[9], KEYS[4]

local second, nowMs = serverTime()
local breaker = breakerNow(KEYS[2], nowMs, ARGV[6], ARGV[7])

if requestId ~= '' then
  local kept = rcall('HMGET', requestKey, 'rt', 'rq', 'lim', 'd')
  if kept[1] then
    return breakerReply(breaker, { CODE.granted, tonumber(kept[1]), tonumber(kept[2]), tonumber(kept[3]), tonumber(kept[4]) })
  end
end

local sums = windowSum(key, BUDGET_FIELDS, second, windowSeconds)
local requests, retries = sums[1], sums[2]
local limit = budgetLimit(ratio, minRetriesPerSecond, windowSeconds, requests)

-- The fleet's p99 latency over the breaker window; 0 while nothing is known.
local function fleetP99()
  return latencyQuantile(windowSum(KEYS[3], LATENCY_FIELDS, second, tonumber(ARGV[8])), 0.99) or 0
end

local code = CODE.granted
if blocksCalls(breaker.state) then
  code = CODE.breaker_open
elseif deadlineMs >= 0 and delayMs + fleetP99() > deadlineMs then
  code = CODE.deadline_exceeded
elseif retries + 1 > limit then
  code = CODE.budget_exhausted
else
  windowAdd(key, BUDGET_FIELDS, { 0, 1 }, second, windowSeconds)
  retries = retries + 1
  if requestId ~= '' then
    rcall('HSET', requestKey, 'rt', retries, 'rq', requests, 'lim', limit, 'd', delayMs)
    rcall('PEXPIRE', requestKey, tonumber(ARGV[10]))
  end
end
return breakerReply(breaker, { code, retries, requests, limit, delayMs })
