--[[
  The epoch of one shard of the store: a marker key without expiry that lives as long as the
  shard's data. A shard that lost its data (restarted without persistence, flushed, replaced by an
  empty node) has no marker; this call sets the caller's candidate, so every instance that knew
  the old epoch sees a new one and knows the shard was reset.

  Input:
    KEYS[1] the shard's epoch marker
    ARGV[1] candidate epoch, set when the shard has none (random, the caller's)

  Output: { epoch, created (1 when this call set it, else 0) }
]]
local rcall = redis.call

local epoch = rcall('GET', KEYS[1])
if epoch then
  return { epoch, 0 }
end
rcall('SET', KEYS[1], ARGV[1])
return { ARGV[1], 1 }
