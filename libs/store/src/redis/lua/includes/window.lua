--[[
  Sliding window of per-second buckets kept in one hash; twin of libs/core SlidingWindowCounter.
  Fields: 'oldest' (oldest live second), 't:<f>' (running total of counter f) and
  '<second>:<f>' (counter f in that second). The window at second s holds seconds
  s - windowSeconds + 1 .. s; older buckets are subtracted from the totals and deleted.
]]
local function windowPrune(key, fields, second, windowSeconds)
  local cutoff = second - windowSeconds
  local oldest = tonumber(rcall('HGET', key, 'oldest'))
  if oldest == nil or oldest > cutoff then
    return
  end
  local seconds = {}
  if cutoff - oldest > 4 * windowSeconds + 64 then
    -- Far behind (a window that shrank a lot): scan the fields instead of every second.
    local seen = {}
    for _, field in ipairs(rcall('HKEYS', key)) do
      local s = tonumber(string.match(field, '^(%d+):'))
      if s and not seen[s] then
        seen[s] = true
        seconds[#seconds + 1] = s
      end
    end
  else
    for s = oldest, second do
      seconds[#seconds + 1] = s
    end
  end
  local newOldest = nil
  for _, s in ipairs(seconds) do
    local probe = s .. ':' .. fields[1]
    if s <= cutoff then
      local bucket = {}
      for i, f in ipairs(fields) do
        bucket[i] = s .. ':' .. f
      end
      local values = rcall('HMGET', key, unpack(bucket))
      if values[1] then
        for i, f in ipairs(fields) do
          local value = tonumber(values[i]) or 0
          -- Skip zeros: -(0) prints as "-0", which HINCRBY refuses.
          if value ~= 0 then
            rcall('HINCRBY', key, 't:' .. f, -value)
          end
        end
        rcall('HDEL', key, unpack(bucket))
      end
    elseif newOldest == nil or s < newOldest then
      if rcall('HEXISTS', key, probe) == 1 then
        newOldest = s
      end
    end
  end
  if newOldest then
    rcall('HSET', key, 'oldest', newOldest)
  else
    rcall('DEL', key)
  end
end

-- The running totals of `fields` over the window ending at `second`, as numbers.
local function windowSum(key, fields, second, windowSeconds)
  windowPrune(key, fields, second, windowSeconds)
  local totalFields = {}
  for i, f in ipairs(fields) do
    totalFields[i] = 't:' .. f
  end
  local values = rcall('HMGET', key, unpack(totalFields))
  local sums = {}
  for i = 1, #fields do
    sums[i] = tonumber(values[i]) or 0
  end
  return sums
end

-- Adds deltas (same order as fields) into the bucket of `second`; the key lives one window
-- past its newest bucket.
local function windowAdd(key, fields, deltas, second, windowSeconds)
  for i, f in ipairs(fields) do
    rcall('HINCRBY', key, second .. ':' .. f, deltas[i])
    rcall('HINCRBY', key, 't:' .. f, deltas[i])
  end
  local oldest = tonumber(rcall('HGET', key, 'oldest'))
  if oldest == nil or second < oldest then
    rcall('HSET', key, 'oldest', second)
  end
  rcall('EXPIRE', key, windowSeconds + 2)
end
