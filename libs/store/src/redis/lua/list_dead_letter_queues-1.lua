--[[
  A page of the queues that parked dead letters in a namespace, by name, forgetting those that
  parked nothing within the retention. The list is capped (note_dead_letter_queue-1.lua), so a
  page sorts at most that many names.

  Input:
    KEYS[1] the namespace's dead-letter queues sorted set (member: queue, score: latest parking, epoch ms)
    ARGV[1] retentionMs
    ARGV[2] after: the previous page's last queue ('' for the first page)
    ARGV[3] limit: most queues in the page

  Output: { next ('' on the last page), queue, latest parking, queue, latest parking, ... }
]]
local rcall = redis.call
--- @include "clock"

local key = KEYS[1]
local after = ARGV[2]
local limit = tonumber(ARGV[3])
local _, nowMs = serverTime()
rcall('ZREMRANGEBYSCORE', key, '-inf', nowMs - tonumber(ARGV[1]))
local listed = rcall('ZRANGE', key, 0, -1, 'WITHSCORES')
local names, parkedAt = {}, {}
for i = 1, #listed, 2 do
  local name = listed[i]
  if after == '' or name > after then
    names[#names + 1] = name
    parkedAt[name] = listed[i + 1]
  end
end
table.sort(names)
local reply = { '' }
for i = 1, math.min(limit, #names) do
  reply[#reply + 1] = names[i]
  reply[#reply + 1] = tonumber(parkedAt[names[i]])
end
if #names > limit then
  reply[1] = names[limit]
end
return reply
