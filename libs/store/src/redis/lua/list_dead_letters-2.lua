--[[
  A page of a queue's dead letters, oldest first, after pruning those past their retention.

  Input:
    KEYS[1] dead-letter entries hash
    KEYS[2] dead-letter index sorted set
    ARGV[1] limit
    ARGV[2] after: the sequence number the previous page ended with ('' for the first page)
    ARGV[3] retentionMs
    ARGV[4] maxLength
    ARGV[5] maxBytes, -1 for no byte cap

  Output: { depth, next sequence number ('' on the last page), entry JSON, ... }
]]
local rcall = redis.call
--- @include "clock"
--- @include "dead_letters"

local entriesKey, indexKey = KEYS[1], KEYS[2]
local limit = tonumber(ARGV[1])
local from = ARGV[2] == '' and '-inf' or '(' .. ARGV[2]

local _, nowMs = serverTime()
local depth = deadLettersPrune(entriesKey, indexKey, nowMs, tonumber(ARGV[3]), tonumber(ARGV[4]),
  tonumber(ARGV[5]))
local rows = rcall('ZRANGE', indexKey, from, '+inf', 'BYSCORE', 'LIMIT', 0, limit + 1, 'WITHSCORES')
local count = math.min(#rows / 2, limit)
local result = { depth, '' }
if #rows / 2 > limit then
  result[2] = rows[2 * limit]
end
for i = 1, count do
  result[#result + 1] = rcall('HGET', entriesKey, rows[2 * i - 1])
end
return result
