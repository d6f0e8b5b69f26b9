--[[
  Decides one retry: the breaker first, then the deadline (the delay plus the fleet's p99 must
  fit in it), then the dependency's fleet-wide budget, and counts the retry when granted.

  With a caller-chosen request id, a grant is kept in KEYS[4] (fields rt, rs, rq, lim, cap, d: the
  budget after it and its delay) for ARGV[10] ms (at least 60 s and the budget window: as long as a caller
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
    ARGV[5] deadlineMs: the caller's remaining deadline, '' when none (a negative one has passed)
    ARGV[6] event channel
    ARGV[7] dependency name
    ARGV[8] latency windowSeconds (the breaker window)
    ARGV[9] request id, '' when none
    ARGV[10] how long a grant is kept for a repeat, ms
    ARGV[11] budget mode, 'adaptive' or 'fixed' (absent: fixed)
    ARGV[12] maxRatio (adaptive only)
  (Flat numbers, not a cjson policy: a few budget numbers, on the hottest path, which
  test/bench/decisions.mjs also calls with EVALSHA.)

  Output: { code, retries, retriesSucceeded, requests, limit, cap, delayMs, retryAfterMs,
    <breaker reply tail> } after
    the decision; code CODE.granted, CODE.budget_exhausted, CODE.deadline_exceeded or
    CODE.breaker_open; retryAfterMs on budget_exhausted and breaker_open (-1 otherwise, or when no
    time is known); for a repeat of a kept grant: CODE.granted and the kept budget and delay, with
    the breaker as it is now. The decision is includes/retry_ask.lua's, as in decide_retries-N.lua.
]]
local rcall = redis.call
--- @include "breaker"
--- @include "retry_ask"

local budget = budgetPolicy(ARGV[11], ARGV[1], ARGV[12], ARGV[2], ARGV[3])
local dep = retryDependency(KEYS[1], KEYS[2], KEYS[3], budget, ARGV[8], ARGV[10], ARGV[6], ARGV[7])
return breakerReply(dep.breaker, retryAsk(dep, tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[9], KEYS[4]))
