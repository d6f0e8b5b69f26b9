package sluice

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// feed keeps every dependency's fleet view current with no per-call request: breaker transitions
// pushed over GET /events (Server-Sent Events), reopened with backoff when it drops; while it is
// down, GET /deps/{dep} polled with If-None-Match. Views (policy) are re-read now and then.
type feed struct {
	c         *Client
	connected atomic.Bool
	// reopen is signalled when a dependency was added: the stream reopens with the longer list.
	reopen  chan struct{}
	mu      sync.Mutex
	reading map[string]bool
	cancel  context.CancelFunc
}

func newFeed(c *Client) *feed {
	return &feed{c: c, reopen: make(chan struct{}, 1), reading: map[string]bool{}}
}

var reconnectBackoff = Backoff{BaseMs: 100, CapMs: 5000, Jitter: "full"}

// follow: a dependency was added; the stream reopens to follow it.
func (f *feed) follow() {
	select {
	case f.reopen <- struct{}{}:
	default:
	}
	f.mu.Lock()
	if f.cancel != nil {
		f.cancel()
	}
	f.mu.Unlock()
}

func (f *feed) pollLoop() {
	t := time.NewTicker(f.c.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-f.c.ctx.Done():
			return
		case <-t.C:
		}
		f.poll()
	}
}

// poll reads every view while the stream is down, and the stale ones while it is up.
func (f *feed) poll() {
	now := time.Now()
	for _, d := range f.c.dependencies() {
		d.mu.Lock()
		age := now.Sub(d.lastRead)
		d.mu.Unlock()
		if !f.connected.Load() || age >= f.c.cfg.ViewRefresh {
			d := d
			f.c.goTracked(func() { f.read(d) })
		}
	}
}

// read is GET /deps/{dep} with If-None-Match.
func (f *feed) read(d *fleetDep) {
	defer d.viewRead()
	f.mu.Lock()
	if f.reading[d.name] {
		f.mu.Unlock()
		return
	}
	f.reading[d.name] = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.reading, d.name)
		f.mu.Unlock()
	}()
	d.mu.Lock()
	etag := d.etag
	d.mu.Unlock()
	header := http.Header{}
	if etag != "" {
		header.Set("If-None-Match", etag)
	}
	var view dependencyView
	status := 0
	newEtag := etag
	err := f.c.coord.call(f.c.ctx, exchange{
		method: "GET", path: "deps/" + d.name, timeout: f.c.cfg.RequestTimeout, header: header, out: &view,
		onResponse: func(s int, h http.Header) {
			status = s
			if e := h.Get("ETag"); e != "" {
				newEtag = e
			}
		},
	})
	if err != nil {
		if f.c.ctx.Err() == nil {
			f.c.link.failed("poll", err, time.Time{})
		}
		return
	}
	f.c.link.succeeded("poll")
	if status == 304 {
		d.mu.Lock()
		d.lastRead = time.Now()
		d.mu.Unlock()
		return
	}
	d.applyView(&view, newEtag, time.Now())
}

func (f *feed) streamLoop() {
	reconnects := 0
	for f.c.ctx.Err() == nil {
		names := f.names()
		if len(names) == 0 {
			select {
			case <-f.reopen:
				continue
			case <-f.c.ctx.Done():
				return
			}
		}
		select { // this stream follows every dependency known now
		case <-f.reopen:
		default:
		}
		ctx, cancel := context.WithCancel(f.c.ctx)
		f.mu.Lock()
		f.cancel = cancel
		f.mu.Unlock()
		err := f.stream(ctx, cancel, names)
		cancel()
		f.connected.Store(false)
		if f.c.ctx.Err() != nil {
			return
		}
		var cfg *ConfigError
		if errors.As(err, &cfg) {
			f.c.link.failed("events", err, time.Time{})
		}
		select {
		case <-f.reopen: // reopened for a new dependency: no backoff
			continue
		default:
		}
		reconnects++
		f.poll() // a dropped stream may hide a missed transition
		wait := time.Duration(reconnectBackoff.delayMs(reconnects, 0, f.c.random)) * time.Millisecond
		if wait < 50*time.Millisecond {
			wait = 50 * time.Millisecond
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-f.reopen:
		case <-f.c.ctx.Done():
			t.Stop()
			return
		}
		t.Stop()
	}
}

func (f *feed) names() []string {
	deps := f.c.dependencies()
	names := make([]string, len(deps))
	for i, d := range deps {
		names[i] = d.name
	}
	sort.Strings(names)
	return names
}

// stream reads one event stream until it ends, goes silent for StreamIdleTimeout, or ctx ends.
func (f *feed) stream(ctx context.Context, cancel context.CancelFunc, names []string) error {
	res, err := f.c.coord.openEvents(ctx, cancel, names, f.c.cfg.RequestTimeout)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	f.connected.Store(true)
	idle := time.AfterFunc(f.c.cfg.StreamIdleTimeout, cancel)
	defer idle.Stop()
	reader := bufio.NewReader(res.Body)
	var event string
	var data []string
	for {
		line, err := reader.ReadString('\n')
		if err != nil {
			return err
		}
		idle.Reset(f.c.cfg.StreamIdleTimeout)
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if len(data) > 0 {
				f.onFrame(event, strings.Join(data, "\n"))
			}
			event, data = "", nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			event = value
		case "data":
			data = append(data, value)
		}
	}
}

func (f *feed) onFrame(event, data string) {
	switch event {
	case "breaker":
		var e struct {
			Dep       string  `json:"dep"`
			State     string  `json:"state"`
			OpenUntil int64   `json:"openUntil"`
			Reason    *string `json:"reason"`
		}
		if json.Unmarshal([]byte(data), &e) != nil || e.Dep == "" || e.State == "" {
			return
		}
		f.c.mu.Lock()
		d := f.c.deps[e.Dep]
		f.c.mu.Unlock()
		if d != nil {
			reason := ""
			if e.Reason != nil {
				reason = *e.Reason
			}
			d.applyState(e.State, true, e.OpenUntil, reason)
		}
	case "policy":
		var e struct {
			Dep string `json:"dep"`
		}
		_ = json.Unmarshal([]byte(data), &e)
		for _, d := range f.c.dependencies() {
			if e.Dep == "" || e.Dep == d.name {
				d.mu.Lock()
				d.etag = ""
				d.mu.Unlock()
				d := d
				f.c.goTracked(func() { f.read(d) })
			}
		}
	}
}
