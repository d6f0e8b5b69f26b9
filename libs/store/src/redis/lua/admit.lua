--[[
  Admits one call: a closed breaker lets it through; a half-open one hands out at most
  halfOpenProbes probe leases fleet-wide (expired leases are reclaimed first); an open one refuses.

  Input:
    KEYS[1] breaker hash
    KEYS[2] probe leases sorted set (member: token, score: expiry in epoch ms)
    ARGV[1] probe token to hand out if this call becomes the probe
    ARGV[2] halfOpenProbes
    ARGV[3] probeLeaseMs
    ARGV[4] event channel
    ARGV[5] dependency name

  Output: { code, retryAfterMs, probeExpiresAt, <breaker reply tail> }
    code 1 granted, 2 granted as the probe, 3 breaker_open; -1 where a value does not apply
]]
local rcall = redis.call
--- @include "clock"
--- @include "breaker"

local halfOpenProbes = tonumber(ARGV[2])
local probeLeaseMs = tonumber(ARGV[3])

local _, nowMs = serverTime()
local breaker = breakerLoad(KEYS[1])
breakerSettle(breaker, nowMs)
if #breaker.transitions > 0 then
  breakerSave(KEYS[1], breaker, nowMs)
  breakerPublish(ARGV[4], ARGV[5], breaker)
end

local reply
if breaker.state == 'half_open' then
  rcall('ZREMRANGEBYSCORE', KEYS[2], '-inf', nowMs)
  if rcall('ZCARD', KEYS[2]) < halfOpenProbes then
    local expiresAt = nowMs + probeLeaseMs
    rcall('ZADD', KEYS[2], expiresAt, ARGV[1])
    rcall('PEXPIRE', KEYS[2], probeLeaseMs + 1000)
    reply = { 2, -1, expiresAt }
  else
    local earliest = rcall('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    reply = { 3, math.max(tonumber(earliest[2]) - nowMs, 0), -1 }
  end
elseif blocksCalls(breaker.state) then
  reply = { 3, breaker.openUntil and math.max(breaker.openUntil - nowMs, 0) or -1, -1 }
else
  reply = { 1, -1, -1 }
end
return breakerReply(breaker, reply)
