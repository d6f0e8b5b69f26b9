--[[
  The generic cell rate algorithm; twin of libs/core gcraTake. One stored value per limit: the
  theoretical arrival time (TAT, epoch ms, fractional). The policy is a table { rate, periodMs,
  burst } (libs/protocol RateLimitPolicy, decoded from cjson). Returns allowed (true/false),
  remaining, retryAfterMs, resetMs and the TAT to store (unchanged when denied).
]]
local GCRA_EPSILON = 1e-6

local function gcraRemaining(tolerance, backlog, interval)
  return math.max(0, math.floor((tolerance - backlog) / interval + GCRA_EPSILON))
end

local function gcraTake(policy, storedTat, nowMs, cost)
  local interval = policy.periodMs / policy.rate
  local tolerance = interval * policy.burst
  local tat = math.max(storedTat or nowMs, nowMs)
  local nextTat = tat + interval * cost
  local allowAt = nextTat - tolerance
  if nowMs < allowAt - GCRA_EPSILON then
    return false, gcraRemaining(tolerance, tat - nowMs, interval), math.ceil(allowAt - nowMs), math.ceil(tat - nowMs), tat
  end
  return true, gcraRemaining(tolerance, nextTat - nowMs, interval), 0, math.ceil(nextTat - nowMs), nextTat
end

-- Stores the TAT; the key lives until the limit is back to a full burst.
local function gcraSave(key, tat, nowMs)
  rcall('SET', key, string.format('%.6f', tat), 'PX', math.max(math.ceil(tat - nowMs), 1))
end
