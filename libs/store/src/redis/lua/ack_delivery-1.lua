--[[
  A message is done: its attempt count (and parked flag) is forgotten.

  Input:
    KEYS[1] the message's attempts hash

  Output: 1 when there was a count, 0 when not
]]
return redis.call('DEL', KEYS[1])
