--[[
  Reads a dependency's history: the steps of the last HISTORY_STEPS (history.lua), on the
  server's clock. Changes nothing.

  Input:
    KEYS[1] history hash

  Output: the steps as stored (cjson, see history.lua), in no order
]]
local rcall = redis.call
--- @include "clock"
--- @include "history"

local second = serverTime()
return historyRead(KEYS[1], second)
