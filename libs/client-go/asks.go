package sluice

import (
	"context"
	"errors"
	"sync"
	"time"
)

// coalesceWindow is how long the first retry ask of a batch waits for others.
const coalesceWindow = 2 * time.Millisecond

// maxRetryAsks is the most asks one POST /retries carries.
const maxRetryAsks = 1000

// retryRequest is the body of POST …/retry (and, with Dep, one ask of POST /retries).
type retryRequest struct {
	Dep          string `json:"dep,omitempty"`
	Attempt      int    `json:"attempt"`
	Idempotent   bool   `json:"idempotent"`
	DeadlineMs   int64  `json:"deadlineMs,omitempty"`
	Status       int    `json:"status,omitempty"`
	Error        string `json:"error,omitempty"`
	RetryAfterMs int64  `json:"retryAfterMs,omitempty"`
	RequestID    string `json:"requestId"`
}

// retryDecision is the coordinator's answer to one ask.
type retryDecision struct {
	Allow        bool        `json:"allow"`
	Reason       string      `json:"reason"`
	DelayMs      int         `json:"delayMs"`
	RetryAfterMs int64       `json:"retryAfterMs"`
	Breaker      breakerWord `json:"breaker"`
}

// retryAsk is one ask on its way: it waits in the coalescer, goes out, and settles.
type retryAsk struct {
	dep     *fleetDep
	request retryRequest
	askedAt time.Time
	// progress learns when the request carrying the ask was written, and its answer came.
	progress *progress
	settled  chan struct{}
	decision retryDecision
	err      error
}

// coalescer gathers the retry asks this process makes within a short window into one
// POST /retries (split beyond 1,000 asks), answered in order; a lone ask goes as POST …/retry.
// Every ask carries its own requestId, so a batch that got no answer is asked again as it was. A
// batch refused as a whole (a 4xx) decided nothing: each ask is then asked alone.
type coalescer struct {
	c       *Client
	mu      sync.Mutex
	waiting []*retryAsk
	timer   *time.Timer
	dueAt   time.Time
}

func (q *coalescer) add(a *retryAsk) {
	q.mu.Lock()
	q.waiting = append(q.waiting, a)
	if len(q.waiting) >= maxRetryAsks {
		batch := q.takeLocked()
		q.mu.Unlock()
		q.send(batch)
		return
	}
	wait := coalesceWindow
	if a.request.DeadlineMs > 0 && time.Duration(a.request.DeadlineMs)*time.Millisecond/2 < wait {
		wait = time.Duration(a.request.DeadlineMs) * time.Millisecond / 2
	}
	if half := q.c.cfg.DecisionTimeout / 2; half < wait {
		wait = half
	}
	due := a.askedAt.Add(wait)
	if q.timer != nil && !due.Before(q.dueAt) {
		q.mu.Unlock()
		return
	}
	if q.timer != nil {
		q.timer.Stop()
	}
	q.dueAt = due
	q.timer = time.AfterFunc(wait, q.fire)
	q.mu.Unlock()
}

func (q *coalescer) takeLocked() []*retryAsk {
	batch := q.waiting
	q.waiting = nil
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
	return batch
}

func (q *coalescer) fire() {
	q.mu.Lock()
	batch := q.takeLocked()
	q.mu.Unlock()
	q.send(batch)
}

// send sends what waited, each ask with the deadline it has left now; an ask whose deadline passed
// meanwhile is not sent.
func (q *coalescer) send(batch []*retryAsk) {
	now := time.Now()
	ready := batch[:0]
	for _, a := range batch {
		if a.request.DeadlineMs > 0 {
			left := a.request.DeadlineMs - now.Sub(a.askedAt).Milliseconds()
			if left < 1 {
				a.err = errAskNotSent
				close(a.settled)
				continue
			}
			a.request.DeadlineMs = left
		}
		ready = append(ready, a)
	}
	for start := 0; start < len(ready); start += maxRetryAsks {
		end := start + maxRetryAsks
		if end > len(ready) {
			end = len(ready)
		}
		part := ready[start:end]
		if !q.c.goTracked(func() { q.c.askBatch(part) }) {
			for _, a := range part {
				a.err = ErrClosed
				close(a.settled)
			}
		}
	}
}

// errAskNotSent: the call's deadline passed before its ask went out; nothing was asked.
var errAskNotSent = errors.New("sluice: the retry ask was not sent: the call's deadline passed")

// askBatch asks a batch and settles every ask in it (the answer handled even when its caller
// stopped waiting: a late answer still tells the link, and a late denial still holds).
func (c *Client) askBatch(batch []*retryAsk) {
	timeouts := c.decisionExchange()
	timeouts.onWritten = func() {
		now := time.Now()
		for _, a := range batch {
			a.progress.markWritten(now)
		}
	}
	timeouts.onAnswer = func() {
		for _, a := range batch {
			a.progress.markArriving()
		}
	}
	if len(batch) == 1 {
		c.askAlone(batch[0], timeouts)
		return
	}
	asks := make([]retryRequest, len(batch))
	for i, a := range batch {
		asks[i] = a.request
		asks[i].Dep = a.dep.name
	}
	var answer struct {
		Decisions []retryDecision `json:"decisions"`
	}
	timeouts.method, timeouts.path, timeouts.body, timeouts.out, timeouts.repeatable = "POST", "retries", map[string]any{"asks": asks}, &answer, true
	err := c.coord.call(c.ctx, timeouts)
	if err == nil && len(answer.Decisions) != len(batch) {
		err = &CoordinatorError{Message: "the coordinator answered a different number of decisions"}
	}
	var ce *CoordinatorError
	if err != nil && errors.As(err, &ce) && ce.Status >= 400 && ce.Status < 500 && ce.Status != 429 {
		for _, a := range batch {
			c.askAlone(a, c.decisionExchange())
		}
		return
	}
	for i, a := range batch {
		if err != nil {
			a.err = err
		} else {
			a.decision = answer.Decisions[i]
		}
		c.settleAsk(a)
	}
}

func (c *Client) askAlone(a *retryAsk, x exchange) {
	x.onAnswer = a.progress.markArriving
	x.onWritten = func() { a.progress.markWritten(time.Now()) }
	x.method, x.path, x.body, x.out, x.repeatable = "POST", "deps/"+a.dep.name+"/retry", a.request, &a.decision, true
	a.err = c.coord.call(c.ctx, x)
	c.settleAsk(a)
}

// settleAsk tells the link and the dependency what the answer said, then wakes the caller.
func (c *Client) settleAsk(a *retryAsk) {
	now := time.Now()
	if a.err == nil {
		c.link.succeeded("retry")
		d := a.decision
		a.dep.applyState(d.Breaker.State, true, d.Breaker.OpenUntil, d.Breaker.Reason)
		if !d.Allow && (d.Reason == string(ReasonBudgetExhausted) || d.Reason == string(ReasonBreakerOpen)) && d.RetryAfterMs > 0 {
			a.dep.hold(Reason(d.Reason), breakerFacts(d.Breaker, d.RetryAfterMs, now), time.Duration(d.RetryAfterMs)*time.Millisecond, now)
		}
	} else if !errors.Is(a.err, ErrClosed) && !errors.Is(a.err, context.Canceled) {
		c.link.failed("retry", a.err, a.askedAt)
	}
	close(a.settled)
}

// decisionExchange: a decision's request may take the longer of the two timeouts (a late answer
// still tells the link); it is asked again, with the same requestId, only within the decision timeout.
func (c *Client) decisionExchange() exchange {
	t := c.cfg.RequestTimeout
	if c.cfg.DecisionTimeout > t {
		t = c.cfg.DecisionTimeout
	}
	return exchange{timeout: t, reAskWithin: c.cfg.DecisionTimeout}
}

// breakerFacts is what a decision's breaker and retryAfterMs say of the breaker that refused.
func breakerFacts(b breakerWord, retryAfterMs int64, now time.Time) BreakerInfo {
	info := BreakerInfo{State: b.State, OpenUntil: msTime(b.OpenUntil)}
	if b.State == StateForcedOpen || b.State == StateForcedClosed {
		info.OperatorReason = b.Reason
	}
	if retryAfterMs > 0 {
		info.RetryAfter = time.Duration(retryAfterMs) * time.Millisecond
	} else if !info.OpenUntil.IsZero() && info.OpenUntil.After(now) {
		info.RetryAfter = info.OpenUntil.Sub(now)
	}
	return info
}

// verdict is a retry decision as a call uses it, whoever made it.
type verdict struct {
	allow   bool
	reason  Reason
	delayMs int
	breaker *BreakerInfo
	// budgetWait: on the fleet's budget_exhausted denial, how long until the same ask could be
	// granted, when it said.
	budgetWait time.Duration
	// local: the fallback granted it (the fleet's budget is charged by the report).
	local bool
}

// retryVerdict decides a retry: the fleet's answer within the decision timeout, or the local
// fallback's while it decides. Before the fallback takes over, a decision that failed or came late
// allows no retry: a slow coordinator never lets the fleet's budget leak through every client's own.
func (c *Client) retryVerdict(ctx context.Context, d *fleetDep, req retryRequest) verdict {
	if !c.link.fallback.Load() {
		if v, decided := c.fleetRetry(ctx, d, req); decided {
			return v
		}
	}
	return c.localRetry(d, req)
}

func (c *Client) localRetry(d *fleetDep, req retryRequest) verdict {
	switch c.cfg.Fallback {
	case FallbackFailClosed:
		return verdict{reason: ReasonCoordinatorUnavailable}
	case FallbackFailOpen:
		p := d.localPolicy()
		d.mu.Lock()
		d.pending.retries++
		d.mu.Unlock()
		return verdict{allow: true, reason: "granted", delayMs: p.Backoff.delayMs(req.Attempt, int(req.RetryAfterMs), c.random), local: true}
	}
	allow, reason, delayMs, info := d.localRetry(req.Attempt, req.DeadlineMs, req.RetryAfterMs, time.Now())
	return verdict{allow: allow, reason: reason, delayMs: delayMs, breaker: info, local: true}
}

var notYet = verdict{reason: ReasonCoordinatorUnavailable}

// awaitUnderWay waits for the answer to the ask under way, at most half the decision timeout from
// when that ask was written, or from askedAt when it was written before: the time it waits in this
// process to go out is not its answer's. It says ctx's error when ctx ends first.
func (c *Client) awaitUnderWay(ctx context.Context, a *retryAsk, askedAt time.Time) error {
	p := a.progress
	select {
	case <-p.written:
	case <-a.settled:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	from := p.writtenAt
	if from.Before(askedAt) {
		from = askedAt
	}
	_, err := within(ctx, a.settled, p.arriving, from.Add(c.cfg.DecisionTimeout/2), c.cfg.DecisionTimeout/2)
	return err
}

// fleetRetry asks the coordinator (or repeats a held denial); decided is false when the fallback
// is to decide.
func (c *Client) fleetRetry(ctx context.Context, d *fleetDep, req retryRequest) (verdict, bool) {
	if c.link.refusal() != nil {
		return verdict{reason: ReasonConfigError}, true
	}
	askedAt := time.Now()
	coalesce := !c.cfg.NoCoalescing
	if coalesce {
		// The asks that fail while one is under way wait for its answer (up to half the decision
		// time): its denial may hold for them too.
		d.mu.Lock()
		underWay := d.underWay
		d.mu.Unlock()
		if underWay != nil {
			if err := c.awaitUnderWay(ctx, underWay, askedAt); err != nil {
				return verdict{reason: ReasonDeadlineExceeded}, true
			}
		}
		if held := d.heldAt(time.Now()); held != nil {
			v := verdict{reason: held.reason}
			if held.reason == ReasonBreakerOpen {
				info := held.breaker
				info.RetryAfter = time.Until(held.until)
				v.breaker = &info
			} else {
				v.budgetWait = time.Until(held.until)
			}
			return v, true
		}
	}
	if req.DeadlineMs > 0 {
		req.DeadlineMs -= time.Since(askedAt).Milliseconds()
		if req.DeadlineMs < 1 {
			return verdict{reason: ReasonDeadlineExceeded}, true
		}
	}
	req.RequestID = newRequestID()
	a := &retryAsk{dep: d, request: req, askedAt: time.Now(), progress: newProgress(), settled: make(chan struct{})}
	if coalesce {
		d.mu.Lock()
		d.underWay = a
		d.mu.Unlock()
		c.asks.add(a)
	} else if !c.goTracked(func() { c.askAlone(a, c.decisionExchange()) }) {
		return notYet, true
	}
	answered, err := c.awaitDecision(ctx, a.progress, a.settled)
	if err != nil {
		return verdict{reason: ReasonDeadlineExceeded}, true
	}
	if !answered {
		return notYet, true // slow is not down: the late answer tells the link
	}
	if coalesce {
		d.mu.Lock()
		if d.underWay == a {
			d.underWay = nil
		}
		d.mu.Unlock()
	}
	if a.err != nil {
		if errors.Is(a.err, errAskNotSent) {
			return verdict{reason: ReasonDeadlineExceeded}, true
		}
		var cfg *ConfigError
		if errors.As(a.err, &cfg) {
			return verdict{reason: ReasonConfigError}, true
		}
		if c.link.fallback.Load() {
			return verdict{}, false
		}
		return notYet, true
	}
	dec := a.decision
	v := verdict{allow: dec.Allow, reason: Reason(dec.Reason), delayMs: dec.DelayMs}
	if dec.Allow {
		d.countFleetRetry(time.Now())
	} else if v.reason == ReasonBreakerOpen {
		info := breakerFacts(dec.Breaker, dec.RetryAfterMs, time.Now())
		v.breaker = &info
	} else if v.reason == ReasonBudgetExhausted {
		v.budgetWait = time.Duration(dec.RetryAfterMs) * time.Millisecond
	}
	return v, true
}
