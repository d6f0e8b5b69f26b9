--[[
  Deletes a dead letter for good, with its message's attempt count.

  Input:
    KEYS[1] dead-letter entries hash
    KEYS[2] dead-letter index sorted set
    KEYS[3] the message's attempts hash
    ARGV[1] messageId

  Output: 1 deleted, 0 when there was none
]]
local rcall = redis.call
--- @include "dead_letters"

return deadLetterRemove(KEYS[1], KEYS[2], KEYS[3], ARGV[1]) and 1 or 0
