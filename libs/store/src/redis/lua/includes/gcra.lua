--[[
  The generic cell rate algorithm; twin of libs/core gcraTake. One stored value per limit: the
  theoretical arrival time (TAT) as '<epoch ms>+<units>/<rate>', units of 1 / rate ms below one
  ms, so an interval (periodMs / rate ms) is a whole number of units and no take rounds. The
  policy is a table { rate, periodMs, burst } (libs/protocol RateLimitPolicy, decoded from cjson).
  Computed on the backlog (TAT - now, in units), at most the tolerance (periodMs * burst units):
  a TAT further ahead (a clock step back) counts as a full burst taken, not as a longer wait.
  gcraTake returns allowed (true/false), remaining, retryAfterMs, resetMs, the backlog to store
  and whether the stored TAT was cut to the tolerance (then stored even when denied).
]]

-- The stored TAT's backlog at nowMs in units of 1 / rate ms, within 0 .. tolerance, and whether
-- it was cut to the tolerance. A TAT from before this format (epoch ms, fractional) is read too.
local function gcraBacklog(policy, stored, nowMs)
  if not stored then return 0, false end
  local ms, units, rate = string.match(stored, '^(%d+)%+([%d.]+)/([%d.]+)$')
  local backlog
  if ms then
    units, rate = tonumber(units), tonumber(rate)
    if rate ~= policy.rate then units = math.ceil(units * policy.rate / rate) end
    backlog = (tonumber(ms) - nowMs) * policy.rate + units
  else
    backlog = math.ceil((tonumber(stored) - nowMs) * policy.rate)
  end
  local tolerance = policy.periodMs * policy.burst
  return math.min(math.max(backlog, 0), tolerance), backlog > tolerance
end

local function gcraTake(policy, stored, nowMs, cost)
  local rate, periodMs = policy.rate, policy.periodMs
  local tolerance = periodMs * policy.burst
  local backlog, clamped = gcraBacklog(policy, stored, nowMs)
  local nextBacklog = backlog + periodMs * cost
  if nextBacklog > tolerance then
    return false, math.floor((tolerance - backlog) / periodMs), math.ceil((nextBacklog - tolerance) / rate),
      math.ceil(backlog / rate), backlog, clamped
  end
  return true, math.floor((tolerance - nextBacklog) / periodMs), 0, math.ceil(nextBacklog / rate), nextBacklog, clamped
end

-- Stores the TAT `backlog` units after nowMs; the key lives until the limit is back to a full burst.
local function gcraSave(key, policy, backlog, nowMs)
  local whole = math.floor(backlog / policy.rate)
  local value = string.format('%d+%s/%s', nowMs + whole, tostring(backlog - whole * policy.rate), tostring(policy.rate))
  rcall('SET', key, value, 'PX', math.max(math.ceil(backlog / policy.rate), 1))
end
