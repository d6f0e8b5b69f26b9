package sluice

// Breaker states, as the API names them.
const (
	StateClosed       = "closed"
	StateOpen         = "open"
	StateHalfOpen     = "half_open"
	StateForcedOpen   = "forced_open"
	StateForcedClosed = "forced_closed"
)

// state is a breaker state as a small integer, for atomic reads on the call path.
type state uint32

const (
	closed state = iota
	open
	halfOpen
	forcedOpen
	forcedClosed
)

var stateNames = [...]string{StateClosed, StateOpen, StateHalfOpen, StateForcedOpen, StateForcedClosed}

func (s state) String() string { return stateNames[s] }

func parseState(name string) (state, bool) {
	for i, n := range stateNames {
		if n == name {
			return state(i), true
		}
	}
	return closed, false
}

// letsCallsOut is true for the states through which a call goes out with no admission.
func (s state) letsCallsOut() bool { return s == closed || s == forcedClosed }

// breakerMachine is the local fallback's breaker: the coordinator's state machine, on this
// process's counts. Time-based transitions happen when it is looked at (settle).
type breakerMachine struct {
	state          state
	since          int64
	openUntil      int64 // ms; 0 when none
	opens          int
	probeSuccesses int
	reason         string
}

// settle applies what time alone causes: open → half_open past openUntil, a forced state lapsing.
func (m *breakerMachine) settle(now int64) (from, to state, moved bool) {
	from = m.state
	switch {
	case m.state == open && m.openUntil != 0 && now >= m.openUntil:
		m.move(halfOpen, m.openUntil)
		m.probeSuccesses = 0
	case (m.state == forcedOpen || m.state == forcedClosed) && m.openUntil != 0 && now >= m.openUntil:
		m.move(closed, m.openUntil)
		m.opens = 0
	}
	return from, m.state, from != m.state
}

func (m *breakerMachine) move(to state, since int64) {
	m.state = to
	m.since = since
	m.openUntil = 0
	m.reason = ""
	m.probeSuccesses = 0
}

func (m *breakerMachine) open(p breakerPolicy, now int64, opens int) {
	m.move(open, now)
	m.opens = opens
	exponent := opens - 1
	if exponent < 0 {
		exponent = 0
	}
	if exponent > 30 {
		exponent = 30
	}
	duration := int64(p.OpenMs) << uint(exponent)
	if duration > int64(p.MaxOpenMs) || duration <= 0 {
		duration = int64(p.MaxOpenMs)
	}
	m.openUntil = now + duration
}

// trips is true when the window says a closed breaker must open.
func trips(p breakerPolicy, successes, failures, slow int64) bool {
	calls := successes + failures
	if calls == 0 || calls < int64(p.MinimumCalls) {
		return false
	}
	const epsilon = 1e-9
	return float64(failures)+epsilon >= p.FailureRateThreshold*float64(calls) ||
		float64(slow)+epsilon >= p.SlowCallRateThreshold*float64(calls)
}

// probeOutcome: successes close a half-open breaker after closeAfterSuccesses, a failure reopens it.
func (m *breakerMachine) probeOutcome(p breakerPolicy, success bool, now int64) {
	if m.state != halfOpen {
		return
	}
	if !success {
		m.open(p, now, m.opens+1)
		return
	}
	m.probeSuccesses++
	if m.probeSuccesses >= p.CloseAfterSuccesses {
		m.move(closed, now)
		m.opens = 0
	}
}
