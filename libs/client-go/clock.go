package sluice

import (
	"sync/atomic"
	"time"
)

// coarseClock is the monotonic clock of the call path, read at most once per millisecond tick: a
// call's start and end mostly share readings with other calls. Reading the system clock costs
// 150 ns or more on some hosts (a virtual machine's clock source), half of what a whole call
// through a closed breaker may cost. The tick runs on a goroutine only while the clock is being
// read: a tick without readings stops it, and the next reading starts it again.
type coarseClock struct {
	c       *Client
	base    time.Time
	reading atomic.Int64
	ticking atomic.Bool
	read    atomic.Bool
}

// nanos is the time since the client started, at most about a millisecond old.
func (k *coarseClock) nanos() int64 {
	if !k.read.Load() {
		k.read.Store(true)
	}
	if k.ticking.Load() {
		return k.reading.Load()
	}
	n := int64(time.Since(k.base))
	k.reading.Store(n)
	if k.ticking.CompareAndSwap(false, true) && !k.c.goTracked(k.tick) {
		k.ticking.Store(false)
	}
	return n
}

func (k *coarseClock) tick() {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-k.c.ctx.Done():
			k.ticking.Store(false)
			return
		case <-t.C:
		}
		k.reading.Store(int64(time.Since(k.base)))
		if !k.read.Swap(false) {
			k.ticking.Store(false)
			return
		}
	}
}

// now is the wall-clock time read from the coarse clock.
func (c *Client) now() time.Time { return c.clock.base.Add(time.Duration(c.clock.nanos())) }
