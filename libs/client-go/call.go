package sluice

import (
	"context"
	"time"
)

// A CallOption changes one call: Idempotent, IdempotencyKey, MaxAttempts, Deadline.
type CallOption interface{ callOption() }

type idempotentOption struct{ idempotent bool }
type keyOption struct{ key string }
type maxAttemptsOption struct{ n int }
type deadlineOption struct{ d time.Duration }

func (idempotentOption) callOption()  {}
func (keyOption) callOption()         {}
func (maxAttemptsOption) callOption() {}
func (deadlineOption) callOption()    {}

// Idempotent says the call may safely run more than once: any failure of the dependency's may be
// retried. Without it (and without an IdempotencyKey) a failed call is not retried.
func Idempotent() CallOption { return idempotentOption{true} }

// NotIdempotent says the call must not run twice, whatever its method says (for a request made
// through the Transport): a failure is then retried only when the call carries an IdempotencyKey.
func NotIdempotent() CallOption { return idempotentOption{false} }

// IdempotencyKey says the call carries an idempotency key: it is sent as Idempotency-Key (by the
// Transport, or by OutgoingHeaders), the same on every attempt, and a failure that says the
// request was not processed (no answer, 408, 429, 503) may be retried.
func IdempotencyKey(key string) CallOption { return keyOption{key} }

// MaxAttempts bounds the call's attempts, the first included (default 3). The coordinator's
// policy may allow fewer.
func MaxAttempts(n int) CallOption { return maxAttemptsOption{n} }

// Deadline bounds the whole call, every attempt, retries and backoff included, when ctx has no
// earlier deadline (default: the dependency's Deadline; without one, 10 s bound the retries and
// backoff but not the first attempt, which runs with ctx as it is).
func Deadline(d time.Duration) CallOption { return deadlineOption{d} }

type callOptions struct {
	idempotent  bool
	key         string
	maxAttempts int
	deadline    time.Duration
	// bounded: the deadline was set (per call, or for the dependency), so it bounds the first
	// attempt too; the built-in default bounds only the retries.
	bounded bool
}

func (o *callOptions) apply(opts []CallOption) {
	for _, opt := range opts {
		switch v := opt.(type) {
		case idempotentOption:
			o.idempotent = v.idempotent
		case keyOption:
			o.key = v.key
		case maxAttemptsOption:
			if v.n >= 1 && v.n <= 100 {
				o.maxAttempts = v.n
			}
		case deadlineOption:
			if v.d > 0 {
				o.deadline = v.d
				o.bounded = true
			}
		}
	}
}

// attemptKey is the context key of an attempt's facts.
type attemptKey struct{}

// attemptInfo is what an attempt's context carries for OutgoingHeaders.
type attemptInfo struct {
	number   int
	deadline time.Time
	key      string
}

// Attempt is the number of the attempt ctx belongs to (1 for the first), or 1 outside a call.
func Attempt(ctx context.Context) int {
	if info, ok := ctx.Value(attemptKey{}).(*attemptInfo); ok {
		return info.number
	}
	return 1
}

// Dependency is a dependency's policy, from Client.Dependency: it runs calls with fleet-approved
// retries, the fleet's breaker, and a deadline over the whole call.
type Dependency struct {
	name   string
	client *Client
	fleet  *fleetDep
	cfg    DependencyConfig
	// deadlineSet: the dependency's Deadline was configured (not the built-in default).
	deadlineSet bool
}

// Name is the dependency's name, as the coordinator knows it.
func (d *Dependency) Name() string { return d.name }

// BreakerState is the breaker state that governs calls now: the fleet's, or the local one while
// the local fallback decides.
func (d *Dependency) BreakerState() string {
	return d.client.governingState(d.fleet, time.Now()).String()
}

// Do runs fn under the dependency's policy. Through a closed breaker the first attempt goes out
// at once, with ctx as it is (no request to the coordinator, no allocation); a failure that is
// the dependency's (see IsDependencyFailure) and may be retried (see Idempotent and
// IdempotencyKey) waits out the dependency's Retry-After, if it sent one, then asks the
// coordinator for a retry and waits the granted backoff. Every retry runs with ctx bounded by
// the call's deadline.
//
// Do returns nil, or fn's own error when it is not the dependency's failure (a 404), or a
// *GiveUpError (the reason, the attempts, and the last error) when a failure is not retried
// (again), or ctx's error when ctx ends first.
func (d *Dependency) Do(ctx context.Context, fn func(ctx context.Context) error, opts ...CallOption) error {
	o := d.callOptions()
	o.apply(opts)
	return d.do(ctx, attemptFunc(fn), &o)
}

// callOptions are the dependency's defaults for a call.
func (d *Dependency) callOptions() callOptions {
	return callOptions{idempotent: d.cfg.Idempotent, maxAttempts: d.cfg.MaxAttempts, deadline: d.cfg.Deadline, bounded: d.deadlineSet}
}

// attempter runs one attempt of a call.
type attempter interface {
	attempt(ctx context.Context) error
}

// attemptFunc is a Do function as an attempter (a func is pointer-shaped: no allocation).
type attemptFunc func(ctx context.Context) error

func (f attemptFunc) attempt(ctx context.Context) error { return f(ctx) }

func (d *Dependency) do(ctx context.Context, fn attempter, o *callOptions) error {
	if err := d.callable(ctx); err != nil {
		return err
	}
	if !d.direct(o) {
		return d.admitted(ctx, fn, o)
	}
	c, f := d.client, d.fleet
	start := c.clock.nanos()
	err := fn.attempt(ctx)
	elapsed := time.Duration(c.clock.nanos() - start)
	if err == nil && f.directSucceeded(elapsed) {
		return nil
	}
	return d.afterDirect(ctx, fn, o, err, elapsed)
}

// callable is why no call may start now: ctx ended, or the client is closed.
func (d *Dependency) callable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d.client.closed.Load() {
		return ErrClosed
	}
	return nil
}

// direct says whether a call's first attempt goes out at once, unasked: the governing breaker
// lets calls out, the dependency is not limited, its view is read, and nothing bounds the attempt.
func (d *Dependency) direct(o *callOptions) bool {
	f, c := d.fleet, d.client
	var s state
	if c.link.fallback.Load() && c.cfg.Fallback == FallbackLocal {
		s = state(f.localState.Load())
	} else {
		s = state(f.fleetState.Load())
	}
	return s.letsCallsOut() && !f.limited.Load() && !f.viewDue.Load() && o.key == "" && !o.bounded && d.cfg.AttemptTimeout == 0
}

// directSucceeded counts a direct first attempt that succeeded faster than a slow call, the request
// and the success together; false when it was slow.
func (f *fleetDep) directSucceeded(elapsed time.Duration) bool {
	if elapsed.Nanoseconds() >= f.slowNs.Load() {
		return false
	}
	f.counted.Add(1<<32 | 1)
	f.latency[bucketOf(elapsed)].Add(1)
	return true
}

// afterDirect goes on with a direct first attempt that failed or was slow: counted, then retried
// when it may be.
func (d *Dependency) afterDirect(ctx context.Context, fn attempter, o *callOptions, err error, elapsed time.Duration) error {
	d.fleet.counted.Add(1 << 32)
	r := newRun(d, ctx, *o, time.Now().Add(-elapsed))
	r.launched = 1
	return r.afterAttempt(fn, err, elapsed, admission{}, false)
}

// admitted runs a call whose first attempt is not direct: admitted first when it must be.
func (d *Dependency) admitted(ctx context.Context, fn attempter, o *callOptions) error {
	return newRun(d, ctx, *o, time.Now()).round(fn)
}

// run is one call past its fast path.
type run struct {
	dep      *Dependency
	ctx      context.Context
	opts     callOptions
	deadline time.Time
	launched int
	lastErr  error
	// granted is set while the attempt under way was granted as a retry.
	granted bool
}

func newRun(d *Dependency, ctx context.Context, o callOptions, start time.Time) *run {
	deadline := start.Add(o.deadline)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	return &run{dep: d, ctx: ctx, opts: o, deadline: deadline}
}

// round sends the next attempt, admitted first when it must be.
func (r *run) round(fn attempter) error {
	c, f := r.dep.client, r.dep.fleet
	if f.viewDue.Load() {
		c.waitFirstView(r.ctx, f, time.Until(r.deadline)/2)
	}
	for {
		now := time.Now()
		if !now.Before(r.deadline) {
			return r.giveUp(ReasonDeadlineExceeded, nil)
		}
		s := c.governingState(f, now)
		var adm admission
		if !s.letsCallsOut() || f.limited.Load() {
			var ref *refusal
			adm, ref = r.admit(s)
			if ref != nil {
				if err := r.ctx.Err(); err != nil {
					return err
				}
				if (ref.reason == ReasonRateLimited || ref.reason == ReasonConcurrencyLimited) && r.waitLimited(ref) {
					continue
				}
				return r.refused(ref)
			}
			// The admission may let the attempt out after the caller's context ended, or after the
			// deadline that bounds this attempt passed (its answer came in time for the decision,
			// not for the call): nothing is sent, and what it granted is given back, its probe kept.
			if err := r.ctx.Err(); err != nil {
				c.unusedAdmission(f, adm)
				return err
			}
			if r.deadlineBindsNext() && !time.Now().Before(r.deadline) {
				c.unusedAdmission(f, adm)
				return r.giveUp(ReasonDeadlineExceeded, nil)
			}
		}
		return r.attempt(fn, adm)
	}
}

// admit asks for the round's admission, waited for until the deadline that bounds this attempt
// at most: when it comes first, the call gives up deadline_exceeded and the answer is a late one.
func (r *run) admit(s state) (admission, *refusal) {
	c, f := r.dep.client, r.dep.fleet
	if !r.deadlineBindsNext() {
		return c.admit(r.ctx, f, s, 1)
	}
	ctx, cancel := context.WithDeadline(r.ctx, r.deadline)
	defer cancel()
	return c.admit(ctx, f, s, 1)
}

// deadlineBindsNext says whether the deadline bounds the next attempt: a retry's always, a first
// attempt's only when the deadline was set (see callOptions.bounded).
func (r *run) deadlineBindsNext() bool {
	return r.opts.bounded || r.launched > 0
}

// waitLimited waits out a limit's refusal when the wait ends before the deadline.
func (r *run) waitLimited(ref *refusal) bool {
	if r.dep.cfg.FailWhenLimited {
		return false
	}
	wait := ref.retryAfter
	if wait < time.Millisecond {
		wait = time.Millisecond
	}
	if !time.Now().Add(wait).Before(r.deadline) {
		return false
	}
	return sleep(r.ctx, wait) == nil
}

// attempt sends one attempt and goes on with its outcome.
func (r *run) attempt(fn attempter, adm admission) error {
	f := r.dep.fleet
	r.launched++
	if r.launched == 1 {
		f.counted.Add(1 << 32)
	}
	ctx := r.ctx
	var cancel context.CancelFunc
	if r.launched > 1 || r.opts.key != "" {
		ctx = context.WithValue(ctx, attemptKey{}, &attemptInfo{number: r.launched, deadline: r.deadline, key: r.opts.key})
	}
	if r.launched > 1 || r.opts.bounded {
		ctx, cancel = context.WithDeadline(ctx, r.deadline)
	}
	if t := r.dep.cfg.AttemptTimeout; t > 0 {
		var cancelAttempt context.CancelFunc
		ctx, cancelAttempt = context.WithTimeout(ctx, t)
		defer cancelAttempt()
	}
	start := time.Now()
	err := fn.attempt(ctx)
	if cancel != nil {
		cancel()
	}
	return r.afterAttempt(fn, err, time.Since(start), adm, true)
}

// afterAttempt counts an attempt's outcome and, after a failure, takes the retry step.
func (r *run) afterAttempt(fn attempter, err error, elapsed time.Duration, adm admission, counted bool) error {
	d, c, f := r.dep, r.dep.client, r.dep.fleet
	now := time.Now()
	if err == nil {
		if counted || elapsed.Nanoseconds() >= f.slowNs.Load() {
			f.recordOutcome(now, elapsed, false)
		}
		if r.granted {
			f.retrySucceeded(now)
		}
		c.settleAdmission(f, adm, true, false)
		return nil
	}
	if r.ctx.Err() != nil {
		// The caller's context ended: the attempt was abandoned, no outcome counted.
		c.settleAdmission(f, adm, false, true)
		return r.ctx.Err()
	}
	r.granted = false
	failure := Classify(err, d.cfg.Classifiers)
	dependencyFailed := IsDependencyFailure(failure)
	f.recordOutcome(now, elapsed, dependencyFailed)
	c.settleAdmission(f, adm, !dependencyFailed, false)
	r.lastErr = err
	denial := retryDenial(failure, r.opts.idempotent, r.opts.key != "")
	switch {
	case denial == "not_retriable":
		return err
	case denial != "":
		return r.giveUp(denial, nil)
	case failure.RetriedDownstream:
		return r.giveUp(ReasonDownstreamRetried, nil)
	case r.launched >= r.opts.maxAttempts:
		return r.giveUp(ReasonMaxAttempts, nil)
	}
	if serving, ok := r.ctx.Value(servingKey{}).(*serving); ok && serving.attempt > 1 && !d.cfg.RetryWhenServingRetry {
		return r.giveUp(ReasonUpstreamRetry, nil)
	}
	if !now.Before(r.deadline) {
		return r.giveUp(ReasonDeadlineExceeded, nil)
	}
	// The dependency's Retry-After is waited out before the ask: the budget counts the retry when it
	// is about to be sent (a grant held through the wait would count as failing until its success is
	// reported), and the fleet decides on what it knows then.
	if failure.RetryAfter > 0 {
		if !now.Add(failure.RetryAfter).Before(r.deadline) {
			return r.giveUp(ReasonDeadlineExceeded, nil)
		}
		if err := sleep(r.ctx, failure.RetryAfter); err != nil {
			return err
		}
	}
	v, err := r.askForRetry(failure)
	if err != nil {
		return err
	}
	// A call the dependency asked to come back later waits once for the fleet's budget, when it
	// frees within that Retry-After and before the deadline, and asks again; one that failed
	// without a Retry-After (an outage, typically) still fails at once.
	if wait := v.budgetWait; !v.allow && v.reason == ReasonBudgetExhausted && failure.RetryAfter > 0 &&
		wait > 0 && wait <= failure.RetryAfter && time.Now().Add(wait).Before(r.deadline) {
		if err := sleep(r.ctx, wait); err != nil {
			return err
		}
		if v, err = r.askForRetry(failure); err != nil {
			return err
		}
	}
	if !v.allow {
		if v.reason == ReasonBreakerOpen {
			info := v.breaker
			if info == nil {
				facts := c.breakerInfo(f, time.Now())
				info = &facts
			}
			return r.refused(&refusal{reason: ReasonBreakerOpen, breaker: info})
		}
		return r.giveUp(v.reason, nil)
	}
	delay := time.Duration(v.delayMs) * time.Millisecond
	if !time.Now().Add(delay).Before(r.deadline) {
		return r.giveUp(ReasonDeadlineExceeded, nil)
	}
	if hook := c.hooks.OnRetry; hook != nil {
		hook(RetryEvent{Dependency: d.name, Attempt: r.launched + 1, Delay: delay, Err: err})
	}
	if err := sleep(r.ctx, delay); err != nil {
		return err
	}
	r.granted = true
	return r.round(fn)
}

// askForRetry asks for the call's next retry: the verdict, or the error that ends the call (no
// time left, or the caller's context ended).
func (r *run) askForRetry(failure Failure) (verdict, error) {
	remaining := time.Until(r.deadline)
	if remaining <= 0 {
		return verdict{}, r.giveUp(ReasonDeadlineExceeded, nil)
	}
	req := retryRequest{Attempt: r.launched, Idempotent: true, DeadlineMs: remaining.Milliseconds()}
	if req.DeadlineMs > maxDurationMs {
		req.DeadlineMs = maxDurationMs
	}
	if req.Attempt > 100 {
		req.Attempt = 100
	}
	if failure.Status != 0 {
		req.Status = failure.Status
	} else {
		req.Error = string(failure.Kind)
	}
	// The answer is waited for until the deadline at most.
	ctx, cancel := context.WithDeadline(r.ctx, r.deadline)
	v := r.dep.client.retryVerdict(ctx, r.dep.fleet, req)
	cancel()
	if err := r.ctx.Err(); err != nil {
		return verdict{}, err
	}
	return v, nil
}

// refused is the give-up a refusal is.
func (r *run) refused(ref *refusal) error {
	e := r.newGiveUp(ref.reason)
	e.Breaker = ref.breaker
	e.RetryAfter = ref.retryAfter
	return r.announce(e)
}

func (r *run) giveUp(reason Reason, _ error) error {
	return r.announce(r.newGiveUp(reason))
}

func (r *run) newGiveUp(reason Reason) *GiveUpError {
	return &GiveUpError{Dependency: r.dep.name, Reason: reason, Attempts: r.launched, Err: r.lastErr}
}

// announce calls the give-up hook and tells the caller of the request being served not to retry it.
func (r *run) announce(e *GiveUpError) error {
	if hook := r.dep.client.hooks.OnGiveUp; hook != nil {
		hook(GiveUpEvent{Dependency: r.dep.name, Reason: e.Reason, Err: e})
	}
	if e.Reason != ReasonNotIdempotent {
		if serving, ok := r.ctx.Value(servingKey{}).(*serving); ok {
			serving.pushback(e.Reason)
		}
	}
	return e
}

// sleep waits d, or until ctx ends (its error); it leaves no timer behind.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
