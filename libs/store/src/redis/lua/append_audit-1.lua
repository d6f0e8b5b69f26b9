--[[
  Appends one operator action to the audit log, stamped with the server's clock; the log keeps
  about the last ARGV[1] entries.

  Input:
    KEYS[1] audit stream
    ARGV[1] most entries kept
    ARGV[2] actor (token id)
    ARGV[3] action
    ARGV[4] namespace
    ARGV[5] target
    ARGV[6] reason ('' when none)
    ARGV[7] durationMs of the forced state the action set ('' when none)
    ARGV[8] endsAt: when that forced state ends, epoch ms ('' when none)

  Output: the entry's time, epoch ms
]]
local rcall = redis.call
--- @include "clock"

local _, nowMs = serverTime()
rcall('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*',
  'at', nowMs, 'actor', ARGV[2], 'action', ARGV[3], 'namespace', ARGV[4], 'target', ARGV[5], 'reason', ARGV[6],
  'durationMs', ARGV[7], 'endsAt', ARGV[8])
return nowMs
