--[[
  The circuit breaker state machine; twin of libs/core BreakerMachine. A record is a hash with
  fields state, since, openUntil, opens, successes, reason and fw (1: the window is owed a clear).
  Transitions (from, to, since, openUntil, reason) are collected in a list and published on the
  dependency's event channel when the script ends.
]]
local BREAKER_EPSILON = 1e-9

-- A breaker policy (libs/protocol BreakerPolicy) travels as one cjson-encoded table with its
-- fields by name: failureRateThreshold, slowCallRateThreshold, minimumCalls, windowSeconds, openMs,
-- maxOpenMs, halfOpenProbes, closeAfterSuccesses, probeLeaseMs, minReporters.

local function breakerLoad(key)
  local v = rcall('HMGET', key, 'state', 'since', 'openUntil', 'opens', 'successes', 'reason', 'fw')
  return {
    state = v[1] or 'closed',
    since = tonumber(v[2]),
    openUntil = tonumber(v[3]),
    opens = tonumber(v[4]) or 0,
    successes = tonumber(v[5]) or 0,
    reason = v[6] or nil,
    -- A forced state lapsed into closed in a script without the window's keys: the window is
    -- stale, and record_outcomes clears it before it next counts (read_dependency reads it as empty).
    freshWindow = v[7] == '1',
    transitions = {},
  }
end

local function breakerMove(b, to, since, openUntil, opens, successes, reason)
  if b.state ~= to then
    b.transitions[#b.transitions + 1] = { b.state, to, since, openUntil, reason }
  end
  b.state, b.since, b.openUntil, b.opens, b.successes, b.reason = to, since, openUntil, opens, successes, reason
  -- Every script that moves the breaker clears the window itself, but breakerSettle's lapse.
  b.freshWindow = false
end

-- Transitions that time alone causes: open -> half_open, a forced state lapsing -> closed. A
-- state that began after nowMs (a clock step back) begins now, its openUntil as far from now as
-- it was from its start, so nothing lasts longer than the duration it was given (b.clamped: to save).
local function breakerSettle(b, nowMs)
  if b.since and b.since > nowMs then
    if b.openUntil then
      b.openUntil = b.openUntil - (b.since - nowMs)
    end
    b.since, b.clamped = nowMs, true
  end
  if b.state == 'open' and b.openUntil and nowMs >= b.openUntil then
    breakerMove(b, 'half_open', b.openUntil, nil, b.opens, 0, nil)
  elseif (b.state == 'forced_open' or b.state == 'forced_closed') and b.openUntil and nowMs >= b.openUntil then
    breakerMove(b, 'closed', b.openUntil, nil, 0, 0, nil)
    b.freshWindow = true
  end
end

local function openDurationMs(policy, opens)
  local exponent = math.min(math.max(opens - 1, 0), 30)
  return math.min(policy.maxOpenMs, policy.openMs * 2 ^ exponent)
end

local function breakerOpen(b, policy, nowMs, opens)
  breakerMove(b, 'open', nowMs, nowMs + openDurationMs(policy, opens), opens, 0, nil)
end

local function windowTrips(policy, successes, failures, slow, failingReporters)
  local calls = successes + failures
  if calls == 0 or calls < policy.minimumCalls then return false end
  if failingReporters < policy.minReporters then return false end
  return failures + BREAKER_EPSILON >= policy.failureRateThreshold * calls
    or slow + BREAKER_EPSILON >= policy.slowCallRateThreshold * calls
end

local function blocksCalls(state)
  return state == 'open' or state == 'forced_open' or state == 'half_open'
end

-- Writes the record back. A closed breaker lives a day; a forced state without expiry until reset.
local function breakerSave(key, b, nowMs)
  rcall('HSET', key, 'state', b.state, 'opens', b.opens, 'successes', b.successes)
  -- A fixed list: pairs() would skip the nil values whose fields must be deleted.
  for _, field in ipairs({ 'since', 'openUntil', 'reason' }) do
    if b[field] then
      rcall('HSET', key, field, b[field])
    else
      rcall('HDEL', key, field)
    end
  end
  if b.freshWindow then
    rcall('HSET', key, 'fw', 1)
  else
    rcall('HDEL', key, 'fw')
  end
  if (b.state == 'forced_open' or b.state == 'forced_closed') and not b.openUntil then
    rcall('PERSIST', key)
  else
    rcall('PEXPIRE', key, math.max((b.openUntil or nowMs) - nowMs, 0) + 86400000)
  end
end

-- Publishes each transition on the dependency's sharded channel.
local function breakerPublish(channel, dependency, b)
  for _, t in ipairs(b.transitions) do
    rcall('SPUBLISH', channel, cjson.encode({
      type = 'breaker', dep = dependency, from = t[1], state = t[2], since = t[3], openUntil = t[4] or cjson.null,
      reason = t[5] or cjson.null,
    }))
  end
end

-- The breaker as it stands now: loaded, its time-based transitions made, stored and published.
local function breakerNow(key, nowMs, channel, dependency)
  local b = breakerLoad(key)
  breakerSettle(b, nowMs)
  if #b.transitions > 0 or b.clamped then
    breakerSave(key, b, nowMs)
    breakerPublish(channel, dependency, b)
  end
  return b
end

-- The reply tail every breaker-aware script returns: state, since, openUntil, reason, opens,
-- probe successes, then from/to pairs of the transitions.
local function breakerReply(b, reply)
  reply[#reply + 1] = b.state
  reply[#reply + 1] = b.since or -1
  reply[#reply + 1] = b.openUntil or -1
  reply[#reply + 1] = b.reason or ''
  reply[#reply + 1] = b.opens
  reply[#reply + 1] = b.successes
  for _, t in ipairs(b.transitions) do
    reply[#reply + 1] = t[1]
    reply[#reply + 1] = t[2]
  end
  return reply
end
