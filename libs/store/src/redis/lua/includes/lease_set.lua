--[[
  Lease sets (concurrency leases, half-open probe leases): sorted sets of holders scored by their
  expiry (epoch ms). The set lives one second past its latest lease, whatever lease was added or
  renewed last, so a short lease never cuts a long one's life short.
]]
local function leaseSetExpire(key)
  local latest = rcall('ZRANGE', key, -1, -1, 'WITHSCORES')
  if latest[2] then
    rcall('PEXPIREAT', key, math.ceil(tonumber(latest[2])) + 1000)
  end
end
