package sluice

import (
	"sync"
	"sync/atomic"
	"time"
)

// latencyBoundsMs are the coordinator's fixed latency buckets: the fleet histogram adds every
// reporter's counts up as they are.
var latencyBoundsMs = [...]int64{1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000,
	1500, 2000, 3000, 5000, 7500, 10000, 15000, 20000, 30000, 60000}

const latencyBuckets = len(latencyBoundsMs) + 1

// bucketOf is the bucket of a latency: the first bound it does not exceed.
func bucketOf(d time.Duration) int {
	ms := d.Milliseconds()
	if d%time.Millisecond != 0 {
		ms++ // 1.2 ms is above the 1 ms bound
	}
	b := 0
	for b < len(latencyBoundsMs) && ms > latencyBoundsMs[b] {
		b++
	}
	return b
}

// Fields of the local budget window and of the local outcome window.
const (
	fRequests, fRetries, fSucceeded = 0, 1, 2
	fSuccesses, fFailures, fSlow    = 0, 1, 2
)

// counts are a dependency's outcomes waiting for the next report.
type counts struct {
	requests, successes, failures, slow int64
	// retries the local fallback granted itself (charged to the fleet's budget).
	retries int64
	// retriesSucceeded: granted retries whose attempt succeeded.
	retriesSucceeded int64
	latency          [latencyBuckets]int64
	probes           []probeOutcome
}

func (c *counts) empty() bool {
	return c.requests == 0 && c.successes == 0 && c.failures == 0 && c.slow == 0 && c.retries == 0 &&
		c.retriesSucceeded == 0 && len(c.probes) == 0
}

func (c *counts) add(o *counts) {
	c.requests += o.requests
	c.successes += o.successes
	c.failures += o.failures
	c.slow += o.slow
	c.retries += o.retries
	c.retriesSucceeded += o.retriesSucceeded
	for i, v := range o.latency {
		c.latency[i] += v
	}
}

type probeOutcome struct {
	Token   string `json:"token"`
	Success bool   `json:"success"`
}

// heldDenial is the fleet's last budget_exhausted or breaker_open retry denial that said when to
// ask again: repeated locally until then, or until a report taken after it reached the coordinator.
type heldDenial struct {
	reason  Reason
	breaker BreakerInfo
	until   time.Time
	since   time.Time
}

// fleetDep is everything one process knows of one dependency, shared by every *Dependency made
// for it: the fleet's breaker state and policy, the counts for the next report, and the local
// fallback's budget and breaker. The call path reads and counts with atomics only.
type fleetDep struct {
	name   string
	client *Client

	fleetState atomic.Uint32
	localState atomic.Uint32
	limited    atomic.Bool
	viewDue    atomic.Bool
	slowNs     atomic.Int64
	// counted holds the first attempts (high 32 bits) and plain successes (low 32 bits) counted on
	// the call path since the last drain: one atomic add for a call through a closed breaker.
	counted atomic.Int64
	latency [latencyBuckets]atomic.Int64

	mu           sync.Mutex
	openUntil    time.Time
	reason       string
	pol          policy
	etag         string
	lastRead     time.Time
	fleetSize    int
	held         *heldDenial
	underWay     *retryAsk
	pending      counts
	pendingSince time.Time
	budget       window
	outcomes     window
	machine      breakerMachine
	probes       int
	backoff      *Backoff
	changes      []BreakerChange
	firstView    chan struct{}

	// kept are fleet probes granted in answers that came after the caller stopped waiting.
	kept []keptProbe
	// leftHalfOpen counts the applied states other than half-open: each drops the kept probes.
	leftHalfOpen uint64
}

func newFleetDep(c *Client, name string, backoff *Backoff) *fleetDep {
	d := &fleetDep{name: name, client: c, pol: defaultPolicy(), backoff: backoff, firstView: make(chan struct{})}
	d.slowNs.Store(int64(d.pol.Breaker.SlowCallMs) * int64(time.Millisecond))
	d.viewDue.Store(true)
	return d
}

// unlock releases d.mu, then announces the breaker changes made under it.
func (d *fleetDep) unlock() {
	changes := d.changes
	d.changes = nil
	d.mu.Unlock()
	if hook := d.client.hooks.OnBreakerChange; hook != nil {
		for _, ch := range changes {
			hook(ch)
		}
	}
}

// localPolicy is the policy the local fallback uses: the coordinator's when known, with the
// configured backoff.
func (d *fleetDep) localPolicy() policy {
	p := d.pol
	if d.backoff != nil {
		p.Backoff = *d.backoff
	}
	return p
}

// share is this process's part of the fleet's budget floor: the configured share, else 1 / the
// reporters the coordinator last counted.
func (d *fleetDep) share() float64 {
	if s := d.client.cfg.FallbackShare; s > 0 {
		return s
	}
	if d.fleetSize > 1 {
		return 1 / float64(d.fleetSize)
	}
	return 1
}

// drainLocked moves the counts taken on the call path into the pending report and the local
// budget and breaker windows.
func (d *fleetDep) drainLocked(now time.Time) {
	both := d.counted.Swap(0)
	requests, successes := both>>32, both&(1<<32-1)
	if requests == 0 && successes == 0 {
		return
	}
	if d.pendingSince.IsZero() {
		d.pendingSince = now
	}
	d.pending.requests += requests
	d.pending.successes += successes
	for i := range d.latency {
		if v := d.latency[i].Load(); v != 0 {
			d.pending.latency[i] += d.latency[i].Swap(0)
		}
	}
	second := now.Unix()
	d.budget.add(second, d.pol.RetryBudget.WindowSeconds, fRequests, requests)
	d.outcomes.add(second, d.pol.Breaker.WindowSeconds, fSuccesses, successes)
}

// recordOutcome counts an attempt that failed or was slow (a plain success is counted on the call
// path); it may open the local breaker.
func (d *fleetDep) recordOutcome(now time.Time, latency time.Duration, failed bool) {
	slow := latency.Nanoseconds() >= d.slowNs.Load()
	if !failed && !slow {
		d.counted.Add(1)
		d.latency[bucketOf(latency)].Add(1)
		return
	}
	d.mu.Lock()
	d.drainLocked(now)
	if d.pendingSince.IsZero() {
		d.pendingSince = now
	}
	d.pending.latency[bucketOf(latency)]++
	second := now.Unix()
	ws := d.pol.Breaker.WindowSeconds
	if failed {
		d.pending.failures++
		d.outcomes.add(second, ws, fFailures, 1)
	} else {
		d.pending.successes++
		d.outcomes.add(second, ws, fSuccesses, 1)
	}
	if slow {
		d.pending.slow++
		d.outcomes.add(second, ws, fSlow, 1)
	}
	d.settleLocalLocked(now)
	if d.machine.state == closed {
		sums := d.outcomes.sum(second, ws)
		if trips(d.pol.Breaker, sums[fSuccesses], sums[fFailures], sums[fSlow]) {
			d.machine.open(d.pol.Breaker, now.UnixMilli(), 1)
			d.outcomes.clear()
			d.publishLocalLocked(closed)
		}
	}
	d.unlock()
}

// settleLocalLocked applies the local breaker's time-based transitions.
func (d *fleetDep) settleLocalLocked(now time.Time) state {
	if from, _, moved := d.machine.settle(now.UnixMilli()); moved {
		if d.machine.state == halfOpen {
			d.probes = 0
		}
		d.publishLocalLocked(from)
	}
	return d.machine.state
}

func (d *fleetDep) publishLocalLocked(from state) {
	to := d.machine.state
	d.localState.Store(uint32(to))
	if from != to && d.client.governsLocally() {
		d.changes = append(d.changes, BreakerChange{Dependency: d.name, From: from.String(), To: to.String(), Source: "local", OperatorReason: d.machine.reason})
	}
}

// fleetStateAt is the fleet state as it stands at now: an open breaker past openUntil is
// half-open, a lapsed forced state closed.
func (d *fleetDep) fleetStateAt(now time.Time) state {
	s := state(d.fleetState.Load())
	if s == closed {
		return s
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.openUntil.IsZero() && !now.Before(d.openUntil) {
		switch s {
		case open:
			return halfOpen
		case forcedOpen, forcedClosed:
			return closed
		}
	}
	return s
}

// applyState takes a state pushed over SSE, read from a view, or returned by a report or a
// decision. openUntil and reason are applied when known (hasDetail).
func (d *fleetDep) applyState(name string, hasDetail bool, openUntilMs int64, reason string) {
	s, ok := parseState(name)
	if !ok {
		return
	}
	d.mu.Lock()
	previous := state(d.fleetState.Load())
	d.fleetState.Store(uint32(s))
	if s != halfOpen {
		d.kept = nil
		d.leftHalfOpen++
	}
	if hasDetail {
		d.openUntil = msTime(openUntilMs)
		d.reason = reason
	} else if s != previous {
		d.openUntil = time.Time{}
		d.reason = ""
	}
	if s != previous && !d.client.governsLocally() {
		d.changes = append(d.changes, BreakerChange{Dependency: d.name, From: previous.String(), To: s.String(), Source: "fleet", OperatorReason: d.reason})
	}
	d.unlock()
}

func msTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// fleetFacts is what the fleet last said of the breaker, as it stands at now.
func (d *fleetDep) fleetFacts(now time.Time) BreakerInfo {
	s := d.fleetStateAt(now)
	d.mu.Lock()
	defer d.mu.Unlock()
	info := BreakerInfo{State: s.String()}
	if s == state(d.fleetState.Load()) {
		info.OpenUntil = d.openUntil
		if !d.openUntil.IsZero() && d.openUntil.After(now) {
			info.RetryAfter = d.openUntil.Sub(now)
		}
	}
	if s == forcedOpen || s == forcedClosed {
		info.OperatorReason = d.reason
	}
	return info
}

// localFacts is the local breaker as it stands at now.
func (d *fleetDep) localFacts(now time.Time) BreakerInfo {
	d.mu.Lock()
	s := d.settleLocalLocked(now)
	info := BreakerInfo{State: s.String(), OpenUntil: msTime(d.machine.openUntil)}
	if s == forcedOpen || s == forcedClosed {
		info.OperatorReason = d.machine.reason
	}
	if !info.OpenUntil.IsZero() && info.OpenUntil.After(now) {
		info.RetryAfter = info.OpenUntil.Sub(now)
	}
	d.unlock()
	return info
}

// fallbackStarts: the local breaker takes the fleet's last known state, so that an open fleet
// breaker or an operator's trip holds, and a recovery the fleet saw is kept.
func (d *fleetDep) fallbackStarts(now time.Time) {
	s := d.fleetStateAt(now)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.machine.settle(now.UnixMilli())
	if s == d.machine.state {
		return
	}
	d.machine = breakerMachine{state: s, since: now.UnixMilli()}
	if s == open || s == forcedOpen || s == forcedClosed {
		d.machine.openUntil = msTimeToMs(d.openUntil)
		d.machine.opens = 1
	}
	if s == forcedOpen || s == forcedClosed {
		d.machine.reason = d.reason
	}
	d.probes = 0
	d.localState.Store(uint32(s))
}

func msTimeToMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// localRetry is the local fallback's retry decision: the coordinator's rules, on this process's
// counts, its budget floor scaled to its share of the fleet.
func (d *fleetDep) localRetry(attempt int, deadlineMs, retryAfterMs int64, now time.Time) (allow bool, reason Reason, delayMs int, info *BreakerInfo) {
	d.mu.Lock()
	d.drainLocked(now)
	p := d.localPolicy()
	delayMs = p.Backoff.delayMs(attempt, int(retryAfterMs), d.client.random)
	s := d.settleLocalLocked(now)
	switch {
	case attempt+1 > p.RetryBudget.MaxAttempts:
		reason = ReasonMaxAttempts
	case s == open || s == forcedOpen || s == halfOpen:
		reason = ReasonBreakerOpen
	case deadlineMs > 0 && int64(delayMs) >= deadlineMs:
		reason = ReasonDeadlineExceeded
	default:
		second := now.Unix()
		sums := d.budget.sum(second, p.RetryBudget.WindowSeconds)
		if !retryFits(p.RetryBudget, d.share(), sums[fRetries], sums[fSucceeded], sums[fRequests]) {
			reason = ReasonBudgetExhausted
			break
		}
		d.budget.add(second, p.RetryBudget.WindowSeconds, fRetries, 1)
		d.pending.retries++
		if d.pendingSince.IsZero() {
			d.pendingSince = now
		}
		d.unlock()
		return true, "granted", delayMs, nil
	}
	d.unlock()
	if reason == ReasonBreakerOpen {
		facts := d.localFacts(now)
		info = &facts
	}
	return false, reason, delayMs, info
}

// countFleetRetry counts a retry the coordinator granted, so that a fallback taking over within
// the window starts from what the process already spent.
func (d *fleetDep) countFleetRetry(now time.Time) {
	d.mu.Lock()
	d.budget.add(now.Unix(), d.pol.RetryBudget.WindowSeconds, fRetries, 1)
	d.mu.Unlock()
}

// retrySucceeded counts a granted retry whose attempt succeeded: reported (it gives its grant
// back under an adaptive budget) and given back in the local budget too.
func (d *fleetDep) retrySucceeded(now time.Time) {
	d.mu.Lock()
	d.pending.retriesSucceeded++
	if d.pendingSince.IsZero() {
		d.pendingSince = now
	}
	d.budget.add(now.Unix(), d.pol.RetryBudget.WindowSeconds, fSucceeded, 1)
	d.mu.Unlock()
}

// tryLocalProbe lets one local probe out of a half-open local breaker.
func (d *fleetDep) tryLocalProbe(now time.Time) bool {
	d.mu.Lock()
	defer d.unlock()
	if d.settleLocalLocked(now) != halfOpen || d.probes >= d.pol.Breaker.HalfOpenProbes {
		return false
	}
	d.probes++
	return true
}

// localProbeOutcome closes the local breaker after enough successes, reopens it on a failure.
func (d *fleetDep) localProbeOutcome(success, abandoned bool, now time.Time) {
	d.mu.Lock()
	if d.probes > 0 {
		d.probes--
	}
	if !abandoned {
		from := d.machine.state
		d.machine.probeOutcome(d.pol.Breaker, success, now.UnixMilli())
		if d.machine.state == closed {
			d.outcomes.clear()
		}
		if from != d.machine.state {
			d.publishLocalLocked(from)
		}
	}
	d.unlock()
}

// addProbe queues a fleet probe's outcome for the next report (sent at once).
func (d *fleetDep) addProbe(token string, success bool, now time.Time) {
	d.mu.Lock()
	d.pending.probes = append(d.pending.probes, probeOutcome{Token: token, Success: success})
	if d.pendingSince.IsZero() {
		d.pendingSince = now
	}
	d.mu.Unlock()
}

// keptProbe is a late answer's fleet probe, good until expires.
type keptProbe struct {
	token   string
	expires time.Time
}

// halfOpenEpoch is the count of applied states other than half-open, taken as an ask goes out.
func (d *fleetDep) halfOpenEpoch() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.leftHalfOpen
}

// keepProbe keeps a late answer's probe until expires, unless a state other than half-open was
// applied since its ask went out (at epoch). At most halfOpenProbes are kept, the newest.
func (d *fleetDep) keepProbe(token string, expires time.Time, epoch uint64) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if token == "" || !now.Before(expires) || d.leftHalfOpen != epoch {
		return
	}
	live := d.kept[:0]
	for _, p := range d.kept {
		if now.Before(p.expires) {
			live = append(live, p)
		}
	}
	for len(live) > 0 && len(live) >= d.pol.Breaker.HalfOpenProbes {
		live = live[1:]
	}
	d.kept = append(live, keptProbe{token: token, expires: expires})
}

// takeKeptProbe takes an unexpired kept probe, with the count of states other than half-open
// applied so far (it is kept again with it if its attempt does not go out); false when there is
// none.
func (d *fleetDep) takeKeptProbe(now time.Time) (keptProbe, uint64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(d.kept) > 0 {
		p := d.kept[0]
		d.kept = d.kept[1:]
		if now.Before(p.expires) {
			return p, d.leftHalfOpen, true
		}
	}
	return keptProbe{}, 0, false
}

// heldAt is the held denial that holds at now, if any.
func (d *fleetDep) heldAt(now time.Time) *heldDenial {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held == nil {
		return nil
	}
	if now.Before(d.held.until) {
		return d.held
	}
	d.held = nil
	return nil
}

// hold keeps a denial that says when to ask again.
func (d *fleetDep) hold(reason Reason, breaker BreakerInfo, retryAfter time.Duration, now time.Time) {
	d.mu.Lock()
	d.held = &heldDenial{reason: reason, breaker: breaker, until: now.Add(retryAfter), since: now}
	d.mu.Unlock()
}

// takeReport takes the pending counts for a report; nil when there are none.
func (d *fleetDep) takeReport(now time.Time) (*counts, time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.drainLocked(now)
	if d.pending.empty() {
		return nil, time.Time{}
	}
	taken := d.pending
	since := d.pendingSince
	d.pending = counts{}
	d.pendingSince = time.Time{}
	return &taken, since
}

// restoreReport puts back counts that could not be delivered (their probes are dropped: the
// probes' leases expire).
func (d *fleetDep) restoreReport(c *counts, since time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending.add(c)
	if d.pendingSince.IsZero() || since.Before(d.pendingSince) {
		d.pendingSince = since
	}
}

// reported: a report taken at takenAt reached the coordinator, which answered state and reporters.
func (d *fleetDep) reported(takenAt time.Time, reporters int) {
	d.mu.Lock()
	if d.held != nil && !d.held.since.After(takenAt) {
		d.held = nil
	}
	if reporters > 0 {
		d.fleetSize = reporters
	}
	d.mu.Unlock()
}

// applyView takes GET /deps/{dep}'s policy and breaker.
func (d *fleetDep) applyView(v *dependencyView, etag string, now time.Time) {
	d.mu.Lock()
	if v.Policy != nil {
		d.pol = *v.Policy
		d.limited.Store(d.pol.limited())
		d.slowNs.Store(int64(d.pol.Breaker.SlowCallMs) * int64(time.Millisecond))
	}
	d.etag = etag
	d.lastRead = now
	d.mu.Unlock()
	if v.Breaker.State != "" {
		d.applyState(v.Breaker.State, true, v.Breaker.OpenUntil, v.Breaker.Reason)
	}
}

// viewRead marks the first view read (or failed): calls stop waiting for it.
func (d *fleetDep) viewRead() {
	if d.viewDue.CompareAndSwap(true, false) {
		close(d.firstView)
	}
}

type dependencyView struct {
	Policy  *policy     `json:"policy"`
	Breaker breakerWord `json:"breaker"`
}

// breakerWord is a breaker as an answer states it.
type breakerWord struct {
	State     string `json:"state"`
	OpenUntil int64  `json:"openUntil"`
	Reason    string `json:"reason"`
}
