--[[
  Counts one failed delivery of a message. The failure of attempt maxAttempts parks the message
  in the queue's dead letters (payload, last error, attempts); a parked message stays parked,
  uncounted, until it is redriven, purged or acked, or its dead letter is dropped (past the
  queue's caps or its retention): then the message is forgotten with it and counts from 1 again.
  Parking past the caps drops the oldest dead letters, counted in the answer (`dropped`).

  With the delivery's own number (ARGV[8], a broker's delivery count), the count becomes
  max(count, attempt): an attempt at or below the count is a repeat (an answer lost to a timeout)
  that changes nothing and answers the count as it stands; a higher one counts as that attempt
  (deliveries whose failures were never recorded count too). The number lives in the count itself,
  so it is kept as long as the count: attemptRetentionMs after the last failure, or the dead
  letter's retention once parked.

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
    ARGV[8] attempt: the delivery this failure is for, 0 when not given
    ARGV[9] deadLetterMaxBytes: most bytes of payload and error the queue keeps, -1 for no cap

  Output: { attempt, deadLetter (0/1), parkedNow (0/1), depth, dropped }
    attempt is the count after the call (for a repeat or a parked message: as it stands)
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
local given = tonumber(ARGV[8])
local maxBytes = tonumber(ARGV[9])

local _, nowMs = serverTime()
local counter = rcall('HMGET', attemptsKey, 'n', 'parked')
if counter[2] == '1' then
  local depth = deadLettersPrune(entriesKey, indexKey, nowMs, retentionMs, maxLength, maxBytes)
  if rcall('HEXISTS', entriesKey, messageId) == 1 then
    return { tonumber(counter[1]), 1, 0, depth, 0 }
  end
  -- Its dead letter was dropped: the message is forgotten with it.
  rcall('DEL', attemptsKey)
  counter = {}
end
local counted = tonumber(counter[1]) or 0
if given > 0 and given <= counted then
  return { counted, 0, 0, rcall('ZCARD', indexKey), 0 }
end
local attempt
if given > 0 then
  attempt = given
  rcall('HSET', attemptsKey, 'n', attempt)
else
  attempt = rcall('HINCRBY', attemptsKey, 'n', 1)
end
if counted == 0 then
  rcall('HSET', attemptsKey, 'first', nowMs)
end
if attempt < maxAttempts then
  rcall('PEXPIRE', attemptsKey, attemptRetentionMs)
  return { attempt, 0, 0, rcall('ZCARD', indexKey), 0 }
end

local seq = rcall('HINCRBY', entriesKey, '#seq', 1)
local previous = rcall('HGET', entriesKey, messageId)
if previous then
  deadLetterDelete(entriesKey, indexKey, messageId, previous)
end
local bytes = #ARGV[4] + #ARGV[3]
local entry = cjson.encode({
  messageId = messageId,
  payload = ARGV[4] ~= '' and ARGV[4] or cjson.null,
  error = ARGV[3] ~= '' and ARGV[3] or cjson.null,
  attempts = attempt,
  deadLetteredAt = nowMs,
  firstAttemptAt = tonumber(rcall('HGET', attemptsKey, 'first')) or nowMs,
  bytes = bytes,
})
rcall('HSET', entriesKey, messageId, entry)
rcall('HINCRBY', entriesKey, '#bytes', bytes)
rcall('ZADD', indexKey, seq, messageId)
rcall('PEXPIRE', entriesKey, retentionMs)
rcall('PEXPIRE', indexKey, retentionMs)
local depth, dropped = deadLettersPrune(entriesKey, indexKey, nowMs, retentionMs, maxLength, maxBytes)
if rcall('HEXISTS', entriesKey, messageId) == 0 then
  -- Past the caps the newest went too: it is not parked, and says so.
  rcall('PEXPIRE', attemptsKey, attemptRetentionMs)
  return { attempt, 0, 0, depth, dropped }
end
rcall('HSET', attemptsKey, 'parked', 1)
rcall('PEXPIRE', attemptsKey, retentionMs)
return { attempt, 1, 1, depth, dropped }
