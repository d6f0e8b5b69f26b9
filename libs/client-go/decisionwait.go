package sluice

import (
	"context"
	"sync/atomic"
	"time"
)

// pendingReads is the least time a decision's waiter gives, once its time is up, to an answer that
// may already have reached the process: the goroutines that read it (the connection's, then the
// exchange's) need a turn each.
const pendingReads = time.Millisecond

// socketPolls bounds how long a running Go process leaves its sockets unpolled: it polls them when
// it has no goroutine to run, and a busy one every 10 ms (the runtime's monitor does).
const socketPolls = 10 * time.Millisecond

// progress is what a decision's waiter learns of its request on the way: when it was first written
// to a coordinator's connection (a re-ask does not move it), and when a coordinator's answer to it
// began to be read.
type progress struct {
	wrote, answering  atomic.Bool
	writtenAt         time.Time
	written, arriving chan struct{}
}

func newProgress() *progress {
	return &progress{written: make(chan struct{}), arriving: make(chan struct{})}
}

// markWritten records the first write, at now (set before written closes).
func (p *progress) markWritten(now time.Time) {
	if p.wrote.CompareAndSwap(false, true) {
		p.writtenAt = now
		close(p.written)
	}
}

// markArriving records that an answer (a 2xx, which is never asked again) is being read.
func (p *progress) markArriving() {
	if p.answering.CompareAndSwap(false, true) {
		close(p.arriving)
	}
}

// awaitDecision waits for settled within the decision timeout, counted from when the request was
// written; the time before (the coalescing window, a connection being opened, a busy process) is
// the call's, bounded by ctx. It says whether settled closed in time (see within), or ctx's error.
func (c *Client) awaitDecision(ctx context.Context, p *progress, settled <-chan struct{}) (bool, error) {
	select {
	case <-p.written:
	case <-settled:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return within(ctx, settled, p.arriving, p.writtenAt.Add(c.cfg.DecisionTimeout), c.cfg.DecisionTimeout)
}

// within waits for done until due. An answer that reached the process by then is in time, though
// it waits unread behind the process's busy goroutines (or behind a machine that did not run the
// process), and an answer whose reading began (arriving) is waited for. So when due has passed the
// waiter gives the pending reads pendingReads; a waiter that noticed late (the process was busy,
// or not run) gives them as long again as it was late, until it wakes on time, and then socketPolls
// more (the process has surely polled its sockets by then). Past due+slack it takes one last look,
// pendingReads after the process runs again. It says whether done closed, or ctx's error.
func within(ctx context.Context, done, arriving <-chan struct{}, due time.Time, slack time.Duration) (bool, error) {
	t := time.NewTimer(time.Until(due))
	defer t.Stop()
	expected, limit := due, due.Add(slack)
	wasLate, last := false, false
	for {
		select {
		case <-done:
			return true, nil
		case <-ctx.Done():
			return false, ctx.Err()
		case <-arriving:
			return settledOrEnded(ctx, done)
		case <-t.C:
		}
		select {
		case <-done:
			return true, nil
		case <-arriving:
			return settledOrEnded(ctx, done)
		default:
		}
		now := time.Now()
		late := now.Sub(expected)
		var grace time.Duration
		switch {
		case last:
			return false, nil
		case now.After(limit):
			last, grace = true, pendingReads
		case late < pendingReads:
			last, grace = true, pendingReads
			if wasLate {
				grace = socketPolls
			}
		default:
			wasLate, grace = true, late
			if grace < socketPolls {
				grace = socketPolls
			}
		}
		expected = now.Add(grace)
		t.Reset(grace)
	}
}

// settledOrEnded waits for an answer being read: what is left is the process's.
func settledOrEnded(ctx context.Context, done <-chan struct{}) (bool, error) {
	select {
	case <-done:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
