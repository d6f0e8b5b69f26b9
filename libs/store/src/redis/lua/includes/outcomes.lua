-- Outcome window counters: successes, failures, slow calls.
local OUTCOME_FIELDS = { 's', 'f', 'w' }
