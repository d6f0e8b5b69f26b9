--[[
  Takes `cost` from a named rate limit for one key (GCRA: exact, no window-edge bursts).

  Input:
    KEYS[1] the limit key's TAT string
    ARGV[1] rate
    ARGV[2] periodMs
    ARGV[3] burst
    ARGV[4] cost

  Output: { allowed (1/0), remaining, retryAfterMs, resetMs }
]]
local rcall = redis.call
--- @include "clock"
--- @include "gcra"

local _, nowMs = serverTime()
local allowed, remaining, retryAfterMs, resetMs, tat =
  gcraTake(tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(rcall('GET', KEYS[1])), nowMs, tonumber(ARGV[4]))
if allowed then
  gcraSave(KEYS[1], tat, nowMs)
end
return { allowed and 1 or 0, remaining, retryAfterMs, resetMs }
