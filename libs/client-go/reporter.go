package sluice

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxReportAge: counts older than this are dropped rather than reported late.
const maxReportAge = 10 * time.Second

// maxReportEntries is the most dependencies one report carries.
const maxReportEntries = 100

// reporter batches every dependency's outcomes into one POST /reports per interval; a probe's
// outcome goes at once. A failed delivery keeps the counts for the next one and tells the link;
// one that works tells it too, which is how the client notices the coordinator is back.
type reporter struct {
	c       *Client
	kick    chan struct{}
	done    chan struct{}
	stopped sync.Once
	// sending serialises deliveries.
	sending sync.Mutex
	// noSucceeded: the coordinator refused retriesSucceeded (an older version), so it is not sent.
	noSucceeded atomic.Bool
}

func newReporter(c *Client) *reporter {
	return &reporter{c: c, kick: make(chan struct{}, 1), done: make(chan struct{})}
}

type reportEntry struct {
	Dep              string         `json:"dep"`
	Requests         int64          `json:"requests"`
	Successes        int64          `json:"successes"`
	Failures         int64          `json:"failures"`
	Slow             int64          `json:"slow"`
	Retries          int64          `json:"retries,omitempty"`
	RetriesSucceeded int64          `json:"retriesSucceeded,omitempty"`
	Latency          *latencyReport `json:"latency,omitempty"`
	Probes           []probeOutcome `json:"probes,omitempty"`
	dep              *fleetDep      `json:"-"`
	counts           *counts        `json:"-"`
	since            time.Time      `json:"-"`
}

type latencyReport struct {
	BoundsMs []int64 `json:"boundsMs"`
	Counts   []int64 `json:"counts"`
}

type reportAnswer struct {
	Deps map[string]struct {
		Breaker   breakerWord `json:"breaker"`
		Reporters int         `json:"reporters"`
	} `json:"deps"`
}

// check sends an empty report: it changes nothing, and says whether the token is accepted.
func (r *reporter) check(ctx context.Context) error {
	err := r.c.coord.call(ctx, exchange{
		method: "POST", path: "reports", timeout: r.c.cfg.RequestTimeout,
		body: map[string]any{"reporter": r.c.cfg.Reporter, "deps": []any{}},
	})
	if err != nil {
		r.c.link.failed("ready", err, time.Time{})
		return err
	}
	r.c.link.succeeded("ready")
	return nil
}

func (r *reporter) loop() {
	t := time.NewTicker(r.c.cfg.ReportInterval)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
		case <-r.kick:
		}
		r.flush()
	}
}

func (r *reporter) stop() { r.stopped.Do(func() { close(r.done) }) }

// flushSoon asks the loop for a delivery now.
func (r *reporter) flushSoon() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// flush delivers what is pending now, and waits for it.
func (r *reporter) flush() {
	r.sending.Lock()
	defer r.sending.Unlock()
	now := time.Now()
	var entries []*reportEntry
	for _, d := range r.c.dependencies() {
		taken, since := d.takeReport(now)
		if taken == nil {
			continue
		}
		if now.Sub(since) > maxReportAge {
			continue // the fleet's window has moved on
		}
		e := &reportEntry{
			Dep: d.name, Requests: taken.requests, Successes: taken.successes, Failures: taken.failures,
			Slow: taken.slow, Retries: taken.retries, Probes: taken.probes, dep: d, counts: taken, since: since,
		}
		if !r.noSucceeded.Load() {
			e.RetriesSucceeded = taken.retriesSucceeded
		}
		var samples int64
		for _, v := range taken.latency {
			samples += v
		}
		if samples > 0 {
			e.Latency = &latencyReport{BoundsMs: latencyBoundsMs[:], Counts: taken.latency[:]}
		}
		entries = append(entries, e)
	}
	for start := 0; start < len(entries); start += maxReportEntries {
		end := start + maxReportEntries
		if end > len(entries) {
			end = len(entries)
		}
		if !r.deliver(entries[start:end], now) {
			for _, e := range entries[start:] {
				e.dep.restoreReport(e.counts, e.since)
			}
			return
		}
	}
}

func (r *reporter) deliver(batch []*reportEntry, takenAt time.Time) bool {
	var answer reportAnswer
	send := func() error {
		return r.c.coord.call(r.c.ctx, exchange{
			method: "POST", path: "reports", timeout: r.c.cfg.RequestTimeout, out: &answer,
			body: map[string]any{"reporter": r.c.cfg.Reporter, "deps": batch},
		})
	}
	err := send()
	var ce *CoordinatorError
	if err != nil && errors.As(err, &ce) && ce.Status == 400 && strings.Contains(ce.Message, "retriesSucceeded") && !r.noSucceeded.Load() {
		// A coordinator without adaptive budgets: report as it knows how.
		r.noSucceeded.Store(true)
		r.c.logger.Info("the coordinator does not take retriesSucceeded in reports; reporting without it")
		for _, e := range batch {
			e.RetriesSucceeded = 0
		}
		err = send()
	}
	if err != nil {
		if r.c.ctx.Err() == nil || !errors.Is(err, r.c.ctx.Err()) {
			r.c.link.failed("report", err, time.Time{})
		}
		return false
	}
	r.c.link.succeeded("report")
	for _, e := range batch {
		reported, ok := answer.Deps[e.Dep]
		e.dep.reported(takenAt, reported.Reporters)
		if ok && reported.Breaker.State != "" {
			// An open or forced breaker comes with until when and the operator's reason.
			b := reported.Breaker
			e.dep.applyState(b.State, b.OpenUntil != 0 || b.Reason != "", b.OpenUntil, b.Reason)
		}
	}
	return true
}
