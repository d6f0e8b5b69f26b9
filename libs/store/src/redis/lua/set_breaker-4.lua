--[[
  An operator's action on a breaker, fleet-wide: trip (forced_open), force-close (forced_closed),
  each until reset or for a duration, or reset (automatic closed). Each clears the window and
  the probe leases, and publishes the resulting state even when it did not change.

  Input:
    KEYS[1] breaker hash
    KEYS[2] outcome window hash
    KEYS[3] failing reporters sorted set
    KEYS[4] probe leases sorted set
    ARGV[1] action: trip, force_close or reset
    ARGV[2] durationMs, '' for until reset (a negative one has lapsed)
    ARGV[3] reason
    ARGV[4] event channel
    ARGV[5] dependency name

  Output: <breaker reply tail> after the action
]]
local rcall = redis.call
--- @include "clock"
--- @include "breaker"

local action = ARGV[1]
local durationMs = tonumber(ARGV[2])
local reason = ARGV[3]

local _, nowMs = serverTime()
local breaker = breakerLoad(KEYS[1])
breakerSettle(breaker, nowMs)
local openUntil = durationMs and nowMs + durationMs or nil
if action == 'trip' then
  breakerMove(breaker, 'forced_open', nowMs, openUntil, 0, 0, reason)
elseif action == 'force_close' then
  breakerMove(breaker, 'forced_closed', nowMs, openUntil, 0, 0, reason)
else
  breakerMove(breaker, 'closed', nowMs, nil, 0, 0, nil)
end
rcall('DEL', KEYS[2], KEYS[3], KEYS[4])
breakerSave(KEYS[1], breaker, nowMs)
if #breaker.transitions == 0 then
  -- Re-entering the same state (a second trip, a new duration) is announced all the same.
  breaker.transitions[1] = { breaker.state, breaker.state, breaker.since, breaker.openUntil, breaker.reason }
  breakerPublish(ARGV[4], ARGV[5], breaker)
  breaker.transitions = {}
else
  breakerPublish(ARGV[4], ARGV[5], breaker)
end
return breakerReply(breaker, {})
