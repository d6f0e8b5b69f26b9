--[[
  Notes that a queue parked a dead letter, in its namespace's list of such queues (the queue's own
  keys live in another slot, so this is a call of its own, made after the parking). Queues that
  parked nothing within the retention are forgotten; past the cap the least recently parked go.

  Input:
    KEYS[1] the namespace's dead-letter queues sorted set (member: queue, score: latest parking, epoch ms)
    ARGV[1] queue
    ARGV[2] retentionMs
    ARGV[3] most queues kept

  Output: how many queues the list holds
]]
local rcall = redis.call
--- @include "clock"

local key = KEYS[1]
local retentionMs = tonumber(ARGV[2])
local _, nowMs = serverTime()
rcall('ZREMRANGEBYSCORE', key, '-inf', nowMs - retentionMs)
rcall('ZADD', key, nowMs, ARGV[1])
rcall('ZREMRANGEBYRANK', key, 0, -tonumber(ARGV[3]) - 1)
rcall('PEXPIRE', key, retentionMs)
return rcall('ZCARD', key)
