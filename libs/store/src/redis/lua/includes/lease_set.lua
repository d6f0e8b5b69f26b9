--[[
  Lease sets (concurrency leases, half-open probe leases): sorted sets of holders scored by their
  expiry (epoch ms). The set lives one second past its latest lease, whatever lease was added or
  renewed last, so a short lease never cuts a long one's life short. A lease ending past now +
  the longer of its leaseMs and the longest such a lease can be (LEASE_LONGEST_MS, the policy
  bounds; twin of libs/core LONGEST_LEASE_MS) was left by a clock step back and is cut to end then.
]]
local LEASE_LONGEST_MS = { concurrency = 3600000, probe = 600000 }

local function leaseSetExpire(key)
  local latest = rcall('ZRANGE', key, -1, -1, 'WITHSCORES')
  if latest[2] then
    rcall('PEXPIREAT', key, math.ceil(tonumber(latest[2])) + 1000)
  end
end

-- Cuts the leases that end past nowMs + max(leaseMs, longestMs) (a clock step back) to end then.
local function leaseSetClamp(key, nowMs, leaseMs, longestMs)
  local latest = nowMs + math.max(leaseMs, longestMs)
  local ahead = rcall('ZRANGEBYSCORE', key, '(' .. latest, '+inf')
  for _, member in ipairs(ahead) do
    rcall('ZADD', key, latest, member)
  end
  if #ahead > 0 then
    leaseSetExpire(key)
  end
end
