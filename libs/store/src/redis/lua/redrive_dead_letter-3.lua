--[[
  Takes a dead letter out of the store to be delivered again: the entry is removed and its
  message's attempt count reset.

  Input:
    KEYS[1] dead-letter entries hash
    KEYS[2] dead-letter index sorted set
    KEYS[3] the message's attempts hash
    ARGV[1] messageId

  Output: the entry's JSON, or nil when there is none
]]
local rcall = redis.call
--- @include "dead_letters"

return deadLetterRemove(KEYS[1], KEYS[2], KEYS[3], ARGV[1])
