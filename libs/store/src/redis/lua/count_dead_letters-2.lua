--[[
  How many dead letters a queue holds, after pruning those past their retention.

  Input:
    KEYS[1] dead-letter entries hash
    KEYS[2] dead-letter index sorted set
    ARGV[1] retentionMs
    ARGV[2] maxLength
    ARGV[3] maxBytes, -1 for no byte cap

  Output: depth
]]
local rcall = redis.call
--- @include "clock"
--- @include "dead_letters"

local _, nowMs = serverTime()
local depth = deadLettersPrune(KEYS[1], KEYS[2], nowMs, tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
return depth
