--[[
  Asserts an operator's forced state again after the store lost it (a store reset), as an
  instance remembers it: the same state, since, openUntil and reason. Idempotent, so every
  instance may ask: nothing changes when the state has lapsed, when the breaker holds a forced
  state at least as recent (already re-asserted, or a later trip), or when it was reset or lapsed
  after `since` (closed since then). Otherwise it is set as set_breaker-4.lua sets it: the window
  and probe leases cleared, the state published.

  Input:
    KEYS[1] breaker hash
    KEYS[2] outcome window hash
    KEYS[3] failing reporters sorted set
    KEYS[4] probe leases sorted set
    ARGV[1] state: forced_open or forced_closed
    ARGV[2] since (epoch ms)
    ARGV[3] openUntil (epoch ms), -1 for until reset
    ARGV[4] reason
    ARGV[5] event channel
    ARGV[6] dependency name

  Output: { applied (1/0), <breaker reply tail> }
]]
local rcall = redis.call
--- @include "clock"
--- @include "breaker"

local state = ARGV[1]
local since = tonumber(ARGV[2])
local openUntil = tonumber(ARGV[3])
if openUntil < 0 then openUntil = nil end

local _, nowMs = serverTime()
local breaker = breakerLoad(KEYS[1])
breakerSettle(breaker, nowMs)
local forced = breaker.state == 'forced_open' or breaker.state == 'forced_closed'
local newer = breaker.since ~= nil and breaker.since >= since
local lapsed = openUntil ~= nil and openUntil <= nowMs
if lapsed or (newer and (forced or breaker.state == 'closed')) then
  return breakerReply(breaker, { 0 })
end
breakerMove(breaker, state, since, openUntil, 0, 0, ARGV[4])
rcall('DEL', KEYS[2], KEYS[3], KEYS[4])
breakerSave(KEYS[1], breaker, nowMs)
breakerPublish(ARGV[5], ARGV[6], breaker)
return breakerReply(breaker, { 1 })
