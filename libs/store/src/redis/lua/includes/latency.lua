--[[
  Fleet latency histograms on fixed bucket bounds (ms); twin of libs/core latency-histogram.ts.
  Counters l1 .. l<#LATENCY_BOUNDS + 1> in a sliding window hash; the last bucket is the overflow.
]]
local LATENCY_BOUNDS = { 1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000,
  3000, 5000, 7500, 10000, 15000, 20000, 30000, 60000 }
local LATENCY_FIELDS = {}
for i = 1, #LATENCY_BOUNDS + 1 do
  LATENCY_FIELDS[i] = 'l' .. i
end

-- The q-quantile as the upper bound of the bucket that holds it; nil with no samples.
local function latencyQuantile(counts, q)
  local total = 0
  for _, count in ipairs(counts) do total = total + count end
  if total == 0 then return nil end
  local rank = math.ceil(q * total - 1e-9)
  local seen = 0
  for i, count in ipairs(counts) do
    seen = seen + count
    if seen >= rank then return LATENCY_BOUNDS[math.min(i, #LATENCY_BOUNDS)] end
  end
  return LATENCY_BOUNDS[#LATENCY_BOUNDS]
end
