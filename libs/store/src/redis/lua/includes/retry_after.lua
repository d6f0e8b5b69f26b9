--[[
  When an exhausted budget could grant the same ask again if no new requests were reported, ms
  from nowMs; twin of libs/core budgetRetryAfterMs. The first moment, as the window's oldest seconds
  leave it (second s leaves at the start of s + windowSeconds), at which retries + 1 <= limit holds
  again; the whole window when only new requests could refill it. Call it after windowSum (pruned).
]]
--- @include "budget"

local function budgetRetryAfterMs(key, ratio, minRetriesPerSecond, windowSeconds, second, nowMs)
  local oldest = tonumber(rcall('HGET', key, 'oldest'))
  if oldest then
    local fields = {}
    for s = oldest, second do
      fields[#fields + 1] = s .. ':rq'
      fields[#fields + 1] = s .. ':rt'
    end
    local values = rcall('HMGET', key, unpack(fields))
    local requests, retries = 0, 0
    for i = 1, #values, 2 do
      requests = requests + (tonumber(values[i]) or 0)
      retries = retries + (tonumber(values[i + 1]) or 0)
    end
    for i = 1, #values, 2 do
      requests = requests - (tonumber(values[i]) or 0)
      retries = retries - (tonumber(values[i + 1]) or 0)
      if retries + 1 <= budgetLimit(ratio, minRetriesPerSecond, windowSeconds, requests) then
        local s = oldest + (i - 1) / 2
        return math.max((s + windowSeconds) * 1000 - nowMs, 0)
      end
    end
  end
  return windowSeconds * 1000
end
