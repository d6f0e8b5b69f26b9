--[[
  Reads the latest audit entries, optionally of one namespace, oldest first.

  Input:
    KEYS[1] audit stream
    ARGV[1] namespace ('' for every namespace)
    ARGV[2] most entries returned

  Output: flat list of at, actor, action, namespace, target, reason, durationMs, endsAt per entry,
    oldest first ('' for a field an entry has not: no reason, no duration, or an entry older than
    the durations)
]]
local rcall = redis.call

local namespace = ARGV[1]
local limit = tonumber(ARGV[2])
local found = {}
local cursor = '+'
while #found < limit do
  local batch = rcall('XREVRANGE', KEYS[1], cursor, '-', 'COUNT', 500)
  if #batch == 0 then break end
  for _, entry in ipairs(batch) do
    local fields = {}
    for i = 1, #entry[2], 2 do fields[entry[2][i]] = entry[2][i + 1] end
    if namespace == '' or fields.namespace == namespace then
      found[#found + 1] = fields
      if #found == limit then break end
    end
  end
  if #batch < 500 then break end
  cursor = '(' .. batch[#batch][1]
end
local reply = {}
for i = #found, 1, -1 do
  local f = found[i]
  for _, value in ipairs({ f.at, f.actor, f.action, f.namespace, f.target, f.reason or '', f.durationMs or '', f.endsAt or '' }) do
    reply[#reply + 1] = value
  end
end
return reply
