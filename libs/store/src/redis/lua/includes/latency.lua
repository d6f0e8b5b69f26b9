--[[
  Fleet latency histograms on fixed bucket bounds (ms); twin of libs/core latency-histogram.ts.
  Counters l1 .. l<#LATENCY_BOUNDS + 1> in a sliding window hash; the last bucket is the overflow.
  The bounds are LATENCY_BOUNDS_MS of libs/core, written in by loadScript (scripts.ts): one source.
]]
local LATENCY_BOUNDS = { ${LATENCY_BOUNDS_MS} }
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
