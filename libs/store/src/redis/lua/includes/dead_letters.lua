--[[
  A queue's dead letters: a hash of entries (message id -> JSON, plus the '#seq' counter) and a
  sorted set of message ids scored by the sequence number they were parked with (oldest first).
]]

-- Drops dead letters past their retention (oldest first, a bounded batch per call) and the
-- oldest past maxLength. Returns the depth left.
local function deadLettersPrune(entriesKey, indexKey, nowMs, retentionMs, maxLength)
  local cutoff = nowMs - retentionMs
  for _ = 1, 100 do
    local oldest = rcall('ZRANGE', indexKey, 0, 0)
    if #oldest == 0 then
      break
    end
    local entry = rcall('HGET', entriesKey, oldest[1])
    if entry and cjson.decode(entry).deadLetteredAt > cutoff then
      break
    end
    rcall('ZREM', indexKey, oldest[1])
    rcall('HDEL', entriesKey, oldest[1])
  end
  local excess = math.min(rcall('ZCARD', indexKey) - maxLength, 1000)
  if excess > 0 then
    local dropped = rcall('ZPOPMIN', indexKey, excess)
    for i = 1, #dropped, 2 do
      rcall('HDEL', entriesKey, dropped[i])
    end
  end
  return rcall('ZCARD', indexKey)
end

-- Removes one dead letter and its message's attempt count; returns its JSON, or false.
local function deadLetterRemove(entriesKey, indexKey, attemptsKey, messageId)
  local entry = rcall('HGET', entriesKey, messageId)
  if not entry then
    return false
  end
  rcall('HDEL', entriesKey, messageId)
  rcall('ZREM', indexKey, messageId)
  rcall('DEL', attemptsKey)
  return entry
end
