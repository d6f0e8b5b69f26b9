--[[
  Counts one failed delivery of a message. The failure of attempt maxAttempts parks the message
  in the queue's dead letters (payload, last error, attempts); a parked message stays parked,
  uncounted, until it is redriven, purged or acked.

  Input:
    KEYS[1] the message's attempts hash (n, first, parked)
    KEYS[2] dead-letter entries hash
    KEYS[3] dead-letter index sorted set
    ARGV[1] messageId
    ARGV[2] maxAttempts
    ARGV[3] error ('' when none)
    ARGV[4] payload as JSON text ('' when none)
    ARGV[5] attemptRetentionMs: the count is kept this long after the last failure
    ARGV[6] deadLetterRetentionMs
    ARGV[7] deadLetterMaxLength

  Output: { attempt, deadLetter (0/1), parkedNow (0/1), depth }
]]
local rcall = redis.call
--- @include "clock"
--- @include "dead_letters"

local attemptsKey, entriesKey, indexKey = KEYS[1], KEYS[2], KEYS[3]
local messageId = ARGV[1]
local maxAttempts = tonumber(ARGV[2])
local attemptRetentionMs = tonumber(ARGV[5])
local retentionMs = tonumber(ARGV[6])
local maxLength = tonumber(ARGV[7])

local _, nowMs = serverTime()
local counter = rcall('HMGET', attemptsKey, 'n', 'parked')
if counter[2] == '1' then
  return { tonumber(counter[1]), 1, 0, deadLettersPrune(entriesKey, indexKey, nowMs, retentionMs, maxLength) }
end
local attempt = rcall('HINCRBY', attemptsKey, 'n', 1)
if attempt == 1 then
  rcall('HSET', attemptsKey, 'first', nowMs)
end
if attempt < maxAttempts then
  rcall('PEXPIRE', attemptsKey, attemptRetentionMs)
  return { attempt, 0, 0, rcall('ZCARD', indexKey) }
end

local seq = rcall('HINCRBY', entriesKey, '#seq', 1)
local entry = cjson.encode({
  messageId = messageId,
  payload = ARGV[4] ~= '' and ARGV[4] or cjson.null,
  error = ARGV[3] ~= '' and ARGV[3] or cjson.null,
  attempts = attempt,
  deadLetteredAt = nowMs,
  firstAttemptAt = tonumber(rcall('HGET', attemptsKey, 'first')) or nowMs,
})
rcall('HSET', entriesKey, messageId, entry)
rcall('ZADD', indexKey, seq, messageId)
rcall('HSET', attemptsKey, 'parked', 1)
rcall('PEXPIRE', attemptsKey, retentionMs)
rcall('PEXPIRE', entriesKey, retentionMs)
rcall('PEXPIRE', indexKey, retentionMs)
return { attempt, 1, 1, deadLettersPrune(entriesKey, indexKey, nowMs, retentionMs, maxLength) }
