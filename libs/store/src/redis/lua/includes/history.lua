--[[
  A dependency's recent history; twin of libs/core dependency-history.ts. A hash of at most
  HISTORY_STEPS fields, one per slot of a ring of steps of HISTORY_STEP_SECONDS (15 minutes at
  10 s): slot (start / step) % steps holds the step that starts at `start` (epoch seconds), as
  cjson [start, successes, failures, slow, retries, retriesSucceeded, requests, limit, cap,
  budget windowSeconds, breaker state]. A slot holding an older step is overwritten; a read keeps
  the steps of the span that ends with the current one. The hash lives one step past the span
  after its last write, when none of it would be read any more. The constants come from libs/core.
]]
local HISTORY_STEP_SECONDS = ${HISTORY_STEP_SECONDS}
local HISTORY_STEPS = ${HISTORY_STEPS}

-- The first second of the step `second` falls in.
local function historyStepStart(second)
  return second - second % HISTORY_STEP_SECONDS
end

-- Records one report in its step: its outcomes added, the budget ({ retries, retriesSucceeded,
-- requests, limit, cap, windowSeconds }) and the breaker state as it leaves them.
local function historyRecord(key, second, successes, failures, slow, budget, state)
  local start = historyStepStart(second)
  local slot = tostring((start / HISTORY_STEP_SECONDS) % HISTORY_STEPS)
  local kept = rcall('HGET', key, slot)
  if kept then
    local step = cjson.decode(kept)
    if step[1] == start then
      successes, failures, slow = successes + step[2], failures + step[3], slow + step[4]
    end
  end
  rcall('HSET', key, slot, cjson.encode({
    start, successes, failures, slow,
    budget[1], budget[2], budget[3], budget[4], budget[5], budget[6], state,
  }))
  rcall('EXPIRE', key, HISTORY_STEP_SECONDS * (HISTORY_STEPS + 1))
end

-- The steps of the span that ends with the step of `second`, as stored (in no order); a step
-- ahead of it (left by a clock step back) is not one of them.
local function historyRead(key, second)
  local newest = historyStepStart(second)
  local oldest = newest - (HISTORY_STEPS - 1) * HISTORY_STEP_SECONDS
  local steps = {}
  for _, value in ipairs(rcall('HVALS', key)) do
    local start = cjson.decode(value)[1]
    if start >= oldest and start <= newest then
      steps[#steps + 1] = value
    end
  end
  return steps
end
