--[[
  A queue's dead letters: a hash of entries (message id -> JSON, plus the '#seq' counter and the
  '#bytes' total of the entries' payload and error bytes) and a sorted set of message ids scored
  by the sequence number they were parked with (oldest first). A message is parked while its
  entry is kept: one dropped by a cap or its retention takes the message's parking with it.
]]

-- Most dead letters one call drops, so every call's work stays bounded: past their retention, and
-- past the caps (DEAD_LETTER_PRUNE_BATCH of libs/core deliveries.ts).
local DEAD_LETTERS_EXPIRED_BATCH = 100
local DEAD_LETTERS_OVER_CAP_BATCH = 1000

-- Takes one dead letter out of the hash and the index, and its bytes off the queue's total.
local function deadLetterDelete(entriesKey, indexKey, messageId, entry)
  rcall('HDEL', entriesKey, messageId)
  rcall('ZREM', indexKey, messageId)
  local bytes = cjson.decode(entry).bytes or 0
  if bytes > 0 then
    rcall('HINCRBY', entriesKey, '#bytes', -bytes)
  end
end

-- Drops, oldest first, dead letters past their retention, then those past maxLength or maxBytes
-- (< 0: no byte cap), a bounded batch of each per call. Returns the depth left and how many the
-- caps dropped.
local function deadLettersPrune(entriesKey, indexKey, nowMs, retentionMs, maxLength, maxBytes)
  local cutoff = nowMs - retentionMs
  for _ = 1, DEAD_LETTERS_EXPIRED_BATCH do
    local oldest = rcall('ZRANGE', indexKey, 0, 0)
    if #oldest == 0 then
      break
    end
    local entry = rcall('HGET', entriesKey, oldest[1])
    if entry and cjson.decode(entry).deadLetteredAt > cutoff then
      break
    end
    if entry then
      deadLetterDelete(entriesKey, indexKey, oldest[1], entry)
    else
      rcall('ZREM', indexKey, oldest[1])
    end
  end
  local dropped = 0
  while dropped < DEAD_LETTERS_OVER_CAP_BATCH do
    local overLength = rcall('ZCARD', indexKey) > maxLength
    local overBytes = maxBytes >= 0 and (tonumber(rcall('HGET', entriesKey, '#bytes')) or 0) > maxBytes
    if not (overLength or overBytes) then
      break
    end
    local oldest = rcall('ZRANGE', indexKey, 0, 0)
    if #oldest == 0 then
      break
    end
    local entry = rcall('HGET', entriesKey, oldest[1])
    if entry then
      deadLetterDelete(entriesKey, indexKey, oldest[1], entry)
    else
      rcall('ZREM', indexKey, oldest[1])
    end
    dropped = dropped + 1
  end
  return rcall('ZCARD', indexKey), dropped
end

-- Removes one dead letter and its message's attempt count; returns its JSON, or false.
local function deadLetterRemove(entriesKey, indexKey, attemptsKey, messageId)
  local entry = rcall('HGET', entriesKey, messageId)
  if not entry then
    return false
  end
  deadLetterDelete(entriesKey, indexKey, messageId, entry)
  rcall('DEL', attemptsKey)
  return entry
end
