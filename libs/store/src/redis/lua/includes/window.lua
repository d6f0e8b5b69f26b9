--[[
  Sliding window of per-second buckets kept in one hash; twin of libs/core SlidingWindowCounter.
  Fields: 'oldest' and 'newest' (oldest and newest live second), 't:<f>' (running total of
  counter f) and '<second>:<f>' (counter f in that second, stored only when not zero: a bucket is
  the fields it has, so 29 latency counters cost what the non-zero ones do). The window at second s holds seconds
  s - windowSeconds + 1 .. s; older buckets are subtracted from the totals and deleted, and so
  are buckets past s (left by a clock step back: they are from no second the clock has reached).
]]

-- The bucket seconds of the hash, from its field names (one scan of the hash).
local function windowBucketSeconds(key)
  local seconds, seen = {}, {}
  for _, field in ipairs(rcall('HKEYS', key)) do
    local s = tonumber(string.match(field, '^(%d+):'))
    if s and not seen[s] then
      seen[s] = true
      seconds[#seconds + 1] = s
    end
  end
  return seconds
end

-- The field names of the bucket of second s.
local function windowBucketFields(fields, s)
  local bucket = {}
  for i, f in ipairs(fields) do
    bucket[i] = s .. ':' .. f
  end
  return bucket
end

-- True when the hash holds any counter of the bucket of second s.
local function windowHasBucket(key, fields, s)
  for _, value in ipairs(rcall('HMGET', key, unpack(windowBucketFields(fields, s)))) do
    if value then
      return true
    end
  end
  return false
end

-- Subtracts the bucket of second s from the totals and deletes it.
local function windowDrop(key, fields, s)
  local bucket = windowBucketFields(fields, s)
  local values = rcall('HMGET', key, unpack(bucket))
  local held = false
  for i, f in ipairs(fields) do
    local value = tonumber(values[i]) or 0
    -- Skip zeros: -(0) prints as "-0", which HINCRBY refuses.
    if value ~= 0 then
      rcall('HINCRBY', key, 't:' .. f, -value)
    end
    held = held or values[i] ~= false
  end
  if held then
    rcall('HDEL', key, unpack(bucket))
  end
end

-- Drops the buckets past `second` (a clock step back left them); newest becomes the last kept.
local function windowDropAhead(key, fields, second)
  local newest = tonumber(rcall('HGET', key, 'newest'))
  if newest == nil or newest <= second then
    return
  end
  local kept = nil
  for _, s in ipairs(windowBucketSeconds(key)) do
    if s > second then
      windowDrop(key, fields, s)
    elseif kept == nil or s > kept then
      kept = s
    end
  end
  if kept then
    rcall('HSET', key, 'newest', kept)
  else
    rcall('DEL', key)
  end
end

local function windowPrune(key, fields, second, windowSeconds)
  windowDropAhead(key, fields, second)
  local cutoff = second - windowSeconds
  local oldest = tonumber(rcall('HGET', key, 'oldest'))
  if oldest == nil or oldest > cutoff then
    return
  end
  local seconds = {}
  if cutoff - oldest > 4 * windowSeconds + 64 then
    -- Far behind (a window that shrank a lot): scan the fields instead of every second.
    seconds = windowBucketSeconds(key)
  else
    for s = oldest, second do
      seconds[#seconds + 1] = s
    end
  end
  local newOldest = nil
  for _, s in ipairs(seconds) do
    if s <= cutoff then
      windowDrop(key, fields, s)
    elseif newOldest == nil or s < newOldest then
      if windowHasBucket(key, fields, s) then
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

-- The running totals of `fields`, as numbers, as the window was last pruned.
local function windowTotals(key, fields)
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

-- The running totals of `fields` over the window ending at `second`, as numbers.
local function windowSum(key, fields, second, windowSeconds)
  windowPrune(key, fields, second, windowSeconds)
  return windowTotals(key, fields)
end

-- Adds deltas (same order as fields) into the bucket of `second`, storing none that is zero;
-- the key lives one window past its newest bucket.
local function windowAdd(key, fields, deltas, second, windowSeconds)
  local added = false
  for i, f in ipairs(fields) do
    local delta = deltas[i] or 0
    if delta ~= 0 then
      rcall('HINCRBY', key, second .. ':' .. f, delta)
      rcall('HINCRBY', key, 't:' .. f, delta)
      added = true
    end
  end
  if not added then
    return
  end
  local bounds = rcall('HMGET', key, 'oldest', 'newest')
  if bounds[1] == false or second < tonumber(bounds[1]) then
    rcall('HSET', key, 'oldest', second)
  end
  if bounds[2] == false or second > tonumber(bounds[2]) then
    rcall('HSET', key, 'newest', second)
  end
  rcall('EXPIRE', key, windowSeconds + 2)
end
