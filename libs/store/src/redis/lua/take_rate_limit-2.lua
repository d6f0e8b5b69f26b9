--[[
  Takes `cost` from a named rate limit for one key (GCRA: exact, no window-edge bursts).

  With a caller-chosen request id, a granted take is kept in KEYS[2] (fields rm, rs: remaining
  and resetMs as first answered) for ARGV[4] ms (at least 60 s and the limit's period: as long as
  a caller could ask again), and a repeat with that id answers the kept take without taking again.
  A denial took nothing and is not kept: a repeat of one is decided again.

  Input:
    KEYS[1] the limit key's TAT string
    KEYS[2] the request id's take hash (never touched when ARGV[3] is '')
    ARGV[1] the policy, cjson: { rate, periodMs, burst }
    ARGV[2] cost
    ARGV[3] request id, '' when none
    ARGV[4] how long a granted take is kept for a repeat, ms

  Output: { CODE.granted or CODE.rate_limited, remaining, retryAfterMs, resetMs }
]]
local rcall = redis.call
--- @include "codes"
--- @include "clock"
--- @include "gcra"

local requestId, requestKey = ARGV[3], KEYS[2]
if requestId ~= '' then
  local kept = rcall('HMGET', requestKey, 'rm', 'rs')
  if kept[1] then
    return { CODE.granted, tonumber(kept[1]), 0, tonumber(kept[2]) }
  end
end

local _, nowMs = serverTime()
local policy = cjson.decode(ARGV[1])
local allowed, remaining, retryAfterMs, resetMs, backlog, clamped =
  gcraTake(policy, rcall('GET', KEYS[1]), nowMs, tonumber(ARGV[2]))
if allowed or clamped then
  gcraSave(KEYS[1], policy, backlog, nowMs)
end
if allowed then
  if requestId ~= '' then
    rcall('HSET', requestKey, 'rm', remaining, 'rs', resetMs)
    rcall('PEXPIRE', requestKey, tonumber(ARGV[4]))
  end
end
return { allowed and CODE.granted or CODE.rate_limited, remaining, retryAfterMs, resetMs }
