--[[
  Decides k retry asks for one dependency, in order, exactly as k calls of decide_retry-4.lua
  would (each ask is includes/retry_ask.lua's decision, seeing the grants of the asks before it):
  the breaker is settled once, then each ask meets the kept grant of its request id, the breaker,
  the deadline and the budget. N in the file name: the key count is 3 + k, given by the caller.

  Input:
    KEYS[1] budget window hash
    KEYS[2] breaker hash
    KEYS[3] latency window hash
    KEYS[3 + i] ask i's request id grant hash (never touched when its request id is '')
    ARGV[1] ratio
    ARGV[2] minRetriesPerSecond
    ARGV[3] windowSeconds
    ARGV[4] event channel
    ARGV[5] dependency name
    ARGV[6] latency windowSeconds (the breaker window)
    ARGV[7] how long a grant is kept for a repeat, ms
    ARGV[8] budget mode, 'adaptive' or 'fixed'
    ARGV[9] maxRatio (adaptive only)
    ARGV[10 + 4(i - 1)] .. ARGV[13 + 4(i - 1)] ask i's delayMs, deadlineMs ('' when none; a negative one has passed), request id
      ('' when none) and mode: 'd' to decide it, 'r' for an ask already denied before the store
      (only the budget is read, as read_dependency-7.lua reads it)

  Output: { <ask 1's code, retries, retriesSucceeded, requests, limit, cap, delayMs, retryAfterMs>,
    …, <ask k's>, <breaker reply tail> }: eight values per ask as decide_retry-4.lua answers them (code 0 for a read),
    then the breaker.
]]
local rcall = redis.call
--- @include "breaker"
--- @include "retry_ask"

local budget = budgetPolicy(ARGV[8], ARGV[1], ARGV[9], ARGV[2], ARGV[3])
local dep = retryDependency(KEYS[1], KEYS[2], KEYS[3], budget, ARGV[6], ARGV[7], ARGV[4], ARGV[5])
local reply = {}
for i = 1, #KEYS - 3 do
  local at = 10 + 4 * (i - 1)
  local decision
  if ARGV[at + 3] == 'r' then
    decision = retryBudgetRead(dep)
  else
    decision = retryAsk(dep, tonumber(ARGV[at]), tonumber(ARGV[at + 1]), ARGV[at + 2], KEYS[3 + i])
  end
  for _, value in ipairs(decision) do
    reply[#reply + 1] = value
  end
end
return breakerReply(dep.breaker, reply)
