--[[
  Admits one call to a dependency in one step: the breaker (a half-open one hands out at most
  halfOpenProbes probe leases fleet-wide), then the rate limit (GCRA), then the concurrency limit
  (leases in a sorted set, expired ones reclaimed first). Nothing is taken unless all say yes.

  With a caller-chosen request id, a grant is kept in KEYS[5] (fields pt, pe, li, le, iu: probe
  token and expiry, lease id and expiry, leases in use) for ARGV[8] ms (at least 60 s and the
  lease's and the probe's life: as long as a caller could ask again), and a repeat with that id
  answers the kept grant, its probe token and lease id, taking nothing twice. A refusal changed
  nothing and is not kept: a repeat of one is decided again.

  Input:
    KEYS[1] breaker hash
    KEYS[2] probe leases sorted set (member: token, score: expiry in epoch ms)
    KEYS[3] rate limit TAT string
    KEYS[4] concurrency leases sorted set (member: lease id, score: expiry in epoch ms)
    KEYS[5] the request id's grant hash (never touched when ARGV[7] is '')
    ARGV[1] the policy, cjson: { breaker = <breaker policy>, rateLimit = { rate, periodMs, burst }
            or absent, concurrency = { limit, leaseMs } or absent }
    ARGV[2] probe token, used if this call becomes the probe
    ARGV[3] cost against the rate limit
    ARGV[4] lease id, used if a lease is granted
    ARGV[5] event channel
    ARGV[6] dependency name
    ARGV[7] request id, '' when none
    ARGV[8] how long a grant is kept for a repeat, ms

  Output: { code, probeExpiresAt, leaseExpiresAt, retryAfterMs, leasesInUse, probeToken, leaseId,
            <breaker reply tail> }
    code CODE.granted, CODE.breaker_open, CODE.rate_limited or CODE.concurrency_limited; -1 where
    a value does not apply ('' for a token or id); for a repeat of a kept grant: CODE.granted and
    the kept probe and lease, with the breaker as it is now
]]
local rcall = redis.call
--- @include "codes"
--- @include "clock"
--- @include "breaker"
--- @include "gcra"
--- @include "lease_set"

local policy = cjson.decode(ARGV[1])
local halfOpenProbes, probeLeaseMs = policy.breaker.halfOpenProbes, policy.breaker.probeLeaseMs
local rateLimit, concurrency = policy.rateLimit, policy.concurrency
local cost, leaseId = tonumber(ARGV[3]), ARGV[4]
local requestId, requestKey = ARGV[7], KEYS[5]

local _, nowMs = serverTime()
local breaker = breakerNow(KEYS[1], nowMs, ARGV[5], ARGV[6])

local function finish(code, probeExpiresAt, leaseExpiresAt, retryAfterMs, inUse, probeToken, grantedLeaseId)
  return breakerReply(breaker,
    { code, probeExpiresAt, leaseExpiresAt, retryAfterMs, inUse, probeToken or '', grantedLeaseId or '' })
end

-- 0. A repeat of a kept grant.
if requestId ~= '' then
  local kept = rcall('HMGET', requestKey, 'pt', 'pe', 'li', 'le', 'iu')
  if kept[1] then
    return finish(CODE.granted, tonumber(kept[2]), tonumber(kept[4]), -1, tonumber(kept[5]), kept[1], kept[3])
  end
end

-- 1. The breaker.
local probe = false
if breaker.state == 'half_open' then
  rcall('ZREMRANGEBYSCORE', KEYS[2], '-inf', nowMs)
  leaseSetClamp(KEYS[2], nowMs, probeLeaseMs, LEASE_LONGEST_MS.probe)
  if rcall('ZCARD', KEYS[2]) >= halfOpenProbes then
    local earliest = rcall('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    return finish(CODE.breaker_open, -1, -1, math.max(tonumber(earliest[2]) - nowMs, 0), -1)
  end
  probe = true
elseif blocksCalls(breaker.state) then
  return finish(CODE.breaker_open, -1, -1, breaker.openUntil and math.max(breaker.openUntil - nowMs, 0) or -1, -1)
end

-- 2. The rate limit, decided now and stored only if the call is admitted.
local newBacklog = nil
if rateLimit then
  local allowed, _, retryAfterMs, _, backlog, clamped = gcraTake(rateLimit, rcall('GET', KEYS[3]), nowMs, cost)
  if not allowed then
    if clamped then
      gcraSave(KEYS[3], rateLimit, backlog, nowMs)
    end
    return finish(CODE.rate_limited, -1, -1, retryAfterMs, -1)
  end
  newBacklog = backlog
end

-- 3. The concurrency limit.
local leaseExpiresAt, inUse = -1, -1
if concurrency then
  rcall('ZREMRANGEBYSCORE', KEYS[4], '-inf', nowMs)
  leaseSetClamp(KEYS[4], nowMs, concurrency.leaseMs, LEASE_LONGEST_MS.concurrency)
  inUse = rcall('ZCARD', KEYS[4])
  if inUse >= concurrency.limit then
    local earliest = rcall('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
    return finish(CODE.concurrency_limited, -1, -1, math.max(tonumber(earliest[2]) - nowMs, 0), inUse)
  end
  leaseExpiresAt = nowMs + concurrency.leaseMs
  rcall('ZADD', KEYS[4], leaseExpiresAt, leaseId)
  leaseSetExpire(KEYS[4])
  inUse = inUse + 1
end

if newBacklog then
  gcraSave(KEYS[3], rateLimit, newBacklog, nowMs)
end
local probeExpiresAt, probeToken = -1, ''
if probe then
  probeExpiresAt, probeToken = nowMs + probeLeaseMs, ARGV[2]
  rcall('ZADD', KEYS[2], probeExpiresAt, probeToken)
  leaseSetExpire(KEYS[2])
end
local grantedLeaseId = leaseExpiresAt >= 0 and leaseId or ''
if requestId ~= '' then
  rcall('HSET', requestKey, 'pt', probeToken, 'pe', probeExpiresAt, 'li', grantedLeaseId, 'le', leaseExpiresAt,
    'iu', inUse)
  rcall('PEXPIRE', requestKey, tonumber(ARGV[8]))
end
return finish(CODE.granted, probeExpiresAt, leaseExpiresAt, -1, inUse, probeToken, grantedLeaseId)
