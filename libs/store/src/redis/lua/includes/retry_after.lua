--[[
  When an exhausted budget could grant the same ask again if nothing new were reported, ms from
  nowMs; twin of libs/core budgetRetryAfterMs. The first moment, as the window's oldest seconds
  leave it (second s leaves at the start of s + windowSeconds), at which budgetFits holds again:
  each departure is tried in turn, since under an adaptive budget a second that leaves with more
  successes than retries makes the net count larger. The whole window when only new requests could
  refill it. `b` is budgetPolicy's table. Call it after windowSum (pruned).
]]
--- @include "budget"

local function budgetRetryAfterMs(key, b, second, nowMs)
  local windowSeconds = b.windowSeconds
  local oldest = tonumber(rcall('HGET', key, 'oldest'))
  if oldest then
    local fields = {}
    for s = oldest, second do
      fields[#fields + 1] = s .. ':rq'
      fields[#fields + 1] = s .. ':rt'
      fields[#fields + 1] = s .. ':rs'
    end
    local values = rcall('HMGET', key, unpack(fields))
    local requests, retries, succeeded = 0, 0, 0
    for i = 1, #values, 3 do
      requests = requests + (tonumber(values[i]) or 0)
      retries = retries + (tonumber(values[i + 1]) or 0)
      succeeded = succeeded + (tonumber(values[i + 2]) or 0)
    end
    for i = 1, #values, 3 do
      requests = requests - (tonumber(values[i]) or 0)
      retries = retries - (tonumber(values[i + 1]) or 0)
      succeeded = succeeded - (tonumber(values[i + 2]) or 0)
      if budgetFits(b, requests, retries, succeeded) then
        local s = oldest + (i - 1) / 3
        return math.max((s + windowSeconds) * 1000 - nowMs, 0)
      end
    end
  end
  return windowSeconds * 1000
end
