--[[
  Claims an idempotency key: a new key is held in flight under a lease and fenced by the
  claimant's token; a completed key answers its stored response; an in-flight key answers the
  time its lease has left; another fingerprint is a mismatch. An in-flight key whose lease has
  expired is taken over with the new token. Twin of libs/core claimIdempotencyEntry.

  A claim with a caller-chosen claim id keeps it in the record (field cid, with rc: whether that
  claim recovered the key). A claim again with the same claim id and fingerprint while its lease
  runs is the holder's own repeat: it answers the token and lease it won, changing nothing. The
  id lives as long as the record: max(lease, retention) from the claim, at least the lease's life.
  A lease never runs past now + the leaseMs it was granted with (field lm): one further ahead (a
  clock step back) is cut to that and stored.

  Input:
    KEYS[1] the key's record hash
    ARGV[1] fingerprint
    ARGV[2] token: the claimant's fencing token
    ARGV[3] leaseMs
    ARGV[4] retentionMs: kept this long after completion
    ARGV[5] claim id, '' when none

  Output:
    { CODE.claimed, leaseExpiresAt }
    { CODE.recovered, leaseExpiresAt }       an expired lease was taken over
    { CODE.completed, response }
    { CODE.in_flight, leaseRemainingMs }
    { CODE.mismatch }                        another fingerprint
    { CODE.resumed, leaseExpiresAt, token, recovered (1/0) }  a repeat of the holder's own claim
]]
local rcall = redis.call
--- @include "codes"
--- @include "clock"

local key = KEYS[1]
local fingerprint = ARGV[1]
local token = ARGV[2]
local leaseMs = tonumber(ARGV[3])
local retentionMs = tonumber(ARGV[4])
local claimId = ARGV[5]

local _, nowMs = serverTime()
local record = rcall('HMGET', key, 'st', 'fp', 'le', 'resp', 'cid', 'tok', 'rc', 'lm')
local state = record[1]

-- Holds the key in flight for this claimant; it lives max(lease, retention) from now.
local function hold(code)
  local leaseExpiresAt = nowMs + leaseMs
  local ttl = math.max(leaseMs, retentionMs)
  rcall('HSET', key, 'st', 'in_flight', 'fp', fingerprint, 'tok', token, 'le', leaseExpiresAt, 'lm', leaseMs,
    'ra', retentionMs, 'ex', nowMs + ttl, 'rc', code == CODE.recovered and 1 or 0)
  if claimId ~= '' then
    rcall('HSET', key, 'cid', claimId)
  else
    rcall('HDEL', key, 'cid')
  end
  rcall('PEXPIRE', key, ttl)
  return { code, leaseExpiresAt }
end

if not state then
  rcall('HSET', key, 'ca', nowMs)
  return hold(CODE.claimed)
end
if record[2] ~= fingerprint then
  return { CODE.mismatch }
end
if state == 'completed' then
  return { CODE.completed, record[4] }
end
local leaseExpiresAt = tonumber(record[3])
local latest = nowMs + (tonumber(record[8]) or leaseMs)
if leaseExpiresAt > latest then
  leaseExpiresAt = latest
  rcall('HSET', key, 'le', leaseExpiresAt)
end
if leaseExpiresAt > nowMs then
  if claimId ~= '' and record[5] == claimId then
    return { CODE.resumed, leaseExpiresAt, record[6], record[7] == '1' and 1 or 0 }
  end
  return { CODE.in_flight, leaseExpiresAt - nowMs }
end
return hold(CODE.recovered)
