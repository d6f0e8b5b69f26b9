package sluice

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// admission is what let an attempt out of a half-open breaker or to a limited dependency.
type admission struct {
	// probe is the fleet probe's token; localProbe a probe of the local breaker.
	probe      string
	localProbe bool
	// probeExpires is when the fleet probe expires, on this clock; epoch the count of states other
	// than half-open applied when its ask went out (see keepProbe): what keeping it takes when its
	// attempt does not go out.
	probeExpires time.Time
	epoch        uint64
	// lease is the fleet's concurrency lease, released when the attempt ends.
	lease string
}

// refusal is why an attempt may not go out.
type refusal struct {
	reason     Reason
	breaker    *BreakerInfo
	retryAfter time.Duration
}

type admitDecision struct {
	Allow        bool        `json:"allow"`
	Reason       string      `json:"reason"`
	RetryAfterMs int64       `json:"retryAfterMs"`
	Breaker      breakerWord `json:"breaker"`
	Probe        *struct {
		Token     string `json:"token"`
		ExpiresAt int64  `json:"expiresAt"`
	} `json:"probe"`
	Lease *struct {
		ID string `json:"id"`
	} `json:"lease"`
}

// admit lets an attempt out when the governing breaker s is not closed (only as a half-open
// breaker's probe) or the dependency is limited: the coordinator answers (POST …/admit), or the
// fallback when it cannot.
func (c *Client) admit(ctx context.Context, d *fleetDep, s state, cost int) (admission, *refusal) {
	now := time.Now()
	if s == open || s == forcedOpen {
		info := c.breakerInfo(d, now)
		return admission{}, &refusal{reason: ReasonBreakerOpen, breaker: &info}
	}
	if !c.link.fallback.Load() {
		if c.link.refusal() != nil {
			return admission{}, &refusal{reason: ReasonConfigError}
		}
		// A probe kept from a late answer goes out without asking (the coordinator would refuse
		// another probe while it is out).
		if s == halfOpen {
			if kept, epoch, ok := d.takeKeptProbe(now); ok {
				return admission{probe: kept.token, probeExpires: kept.expires, epoch: epoch}, nil
			}
		}
		if adm, ref, decided := c.fleetAdmit(ctx, d, cost); decided {
			return adm, ref
		}
		s = c.governingState(d, time.Now())
	}
	return c.localAdmit(d, s, now)
}

func (c *Client) fleetAdmit(ctx context.Context, d *fleetDep, cost int) (admission, *refusal, bool) {
	body := map[string]any{"requestId": newRequestID()}
	if cost != 1 {
		body["cost"] = cost
	}
	var answer admitDecision
	var err error
	progress := newProgress()
	settled := make(chan struct{})
	startedAt := time.Now()
	epoch := d.halfOpenEpoch()
	// claimed: the caller took the answer, or gave up waiting for it (then the goroutine handles it).
	var claimed atomic.Bool
	ok := c.goTracked(func() {
		x := c.decisionExchange()
		x.method, x.path, x.body, x.out, x.repeatable = "POST", "deps/"+d.name+"/admit", body, &answer, true
		x.onWritten = func() { progress.markWritten(time.Now()) }
		x.onAnswer = progress.markArriving
		callErr := c.coord.call(c.ctx, x)
		if claimed.CompareAndSwap(false, true) {
			err = callErr
			close(settled)
			return
		}
		// Nobody waits for this answer: it still tells the link, a lease it holds goes back, and a
		// probe it carries is kept for the next attempt (the fleet lets no other probe out).
		if callErr == nil {
			c.link.succeeded("admit")
			if answer.Lease != nil {
				c.releaseLease(d, answer.Lease.ID)
			}
			if answer.Allow && answer.Probe != nil {
				d.keepProbe(answer.Probe.Token, probeExpiry(answer.Probe.ExpiresAt, startedAt), epoch)
			}
		} else {
			c.link.failed("admit", callErr, startedAt)
		}
	})
	if !ok {
		return admission{}, &refusal{reason: ReasonCoordinatorUnavailable}, true
	}
	answered, ctxErr := c.awaitDecision(ctx, progress, settled)
	if !answered && claimed.CompareAndSwap(false, true) {
		if ctxErr != nil {
			return admission{}, &refusal{reason: ReasonDeadlineExceeded}, true
		}
		return admission{}, nil, false
	}
	<-settled
	if err != nil {
		c.link.failed("admit", err, startedAt)
		var cfg *ConfigError
		if errors.As(err, &cfg) {
			return admission{}, &refusal{reason: ReasonConfigError}, true
		}
		return admission{}, nil, false
	}
	c.link.succeeded("admit")
	d.applyState(answer.Breaker.State, true, answer.Breaker.OpenUntil, answer.Breaker.Reason)
	if !answer.Allow {
		switch Reason(answer.Reason) {
		case ReasonRateLimited, ReasonConcurrencyLimited:
			return admission{}, &refusal{reason: Reason(answer.Reason), retryAfter: time.Duration(answer.RetryAfterMs) * time.Millisecond}, true
		}
		info := breakerFacts(answer.Breaker, answer.RetryAfterMs, time.Now())
		return admission{}, &refusal{reason: ReasonBreakerOpen, breaker: &info}, true
	}
	var adm admission
	if answer.Probe != nil {
		adm.probe = answer.Probe.Token
		adm.probeExpires, adm.epoch = probeExpiry(answer.Probe.ExpiresAt, startedAt), epoch
	}
	if answer.Lease != nil {
		adm.lease = answer.Lease.ID
	}
	return adm, nil, true
}

// probeExpiry is when a probe granted with expiresAt (epoch ms) expires: counted on this clock
// from when its ask went out (at startedAt).
func probeExpiry(expiresAtMs int64, startedAt time.Time) time.Time {
	return startedAt.Add(time.Duration(expiresAtMs-startedAt.UnixMilli()) * time.Millisecond)
}

// localAdmit is the fallback's admission: the breaker as it governs, a local probe only while the
// local breaker governs; the limits are not kept locally (a limited dependency's calls go out
// unchecked, said once, except with fail-closed).
func (c *Client) localAdmit(d *fleetDep, s state, now time.Time) (admission, *refusal) {
	if s == open || s == forcedOpen {
		info := c.breakerInfo(d, now)
		return admission{}, &refusal{reason: ReasonBreakerOpen, breaker: &info}
	}
	if d.limited.Load() {
		if c.cfg.Fallback == FallbackFailClosed {
			return admission{}, &refusal{reason: ReasonCoordinatorUnavailable}
		}
		c.uncheckedOnce.Do(func() {
			c.logger.Warn("rate and concurrency limits go unchecked while the coordinator does not answer", "dependency", d.name)
		})
	}
	if s != halfOpen {
		return admission{}, nil
	}
	if c.governsLocally() && d.tryLocalProbe(now) {
		return admission{localProbe: true}, nil
	}
	info := c.breakerInfo(d, now)
	return admission{}, &refusal{reason: ReasonBreakerOpen, breaker: &info}
}

// settleAdmission gives back what an attempt held and reports a probe's outcome (at once).
func (c *Client) settleAdmission(d *fleetDep, adm admission, success, abandoned bool) {
	if adm.lease != "" {
		c.releaseLease(d, adm.lease)
	}
	if adm.localProbe {
		d.localProbeOutcome(success, abandoned, time.Now())
	}
	if adm.probe != "" && !abandoned {
		d.addProbe(adm.probe, success, time.Now())
		c.reporter.flushSoon()
	}
}

// unusedAdmission gives back an admission whose attempt does not go out (the call's deadline
// passed, or its context ended, while it was asked for): its lease is released, a fleet probe is
// kept for the next attempt as a late answer's is (the fleet lets no other probe out until this
// one's outcome is reported or it expires), and a local probe goes back to the local breaker.
func (c *Client) unusedAdmission(d *fleetDep, adm admission) {
	if adm.lease != "" {
		c.releaseLease(d, adm.lease)
	}
	if adm.localProbe {
		d.localProbeOutcome(false, true, time.Now())
	}
	if adm.probe != "" {
		d.keepProbe(adm.probe, adm.probeExpires, adm.epoch)
	}
}

// releaseLease gives a concurrency lease back (DELETE …/leases/{id}), not waited for.
func (c *Client) releaseLease(d *fleetDep, id string) {
	c.goTracked(func() {
		_ = c.coord.call(c.ctx, exchange{method: "DELETE", path: "deps/" + d.name + "/leases/" + id, timeout: c.cfg.RequestTimeout})
	})
}
