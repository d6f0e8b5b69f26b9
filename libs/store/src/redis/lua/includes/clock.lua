-- The server's clock: the only clock a decision reads. Returns epoch seconds and milliseconds.
local function serverTime()
  local t = rcall('TIME')
  local seconds = tonumber(t[1])
  return seconds, seconds * 1000 + math.floor(tonumber(t[2]) / 1000)
end
