package sluice

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"testing"
	"time"
)

// settledGoroutines waits until the goroutine count is at most want (or 5 s pass) and returns it.
func settledGoroutines(want int) int {
	until := time.Now().Add(5 * time.Second)
	for {
		http.DefaultClient.CloseIdleConnections()
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(until) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCloseLeavesNoGoroutineRunning(t *testing.T) {
	f := needFleet(t)
	dep := newScripted(t, 503, 200)
	before := settledGoroutines(0)
	c, err := New(Config{BaseURLs: f.urls, Namespace: newNamespace(), Token: clientSecret, Logger: testLogger{t}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pay", "inventory", "search"} {
		if err := c.Dependency(name).Do(context.Background(), dep.get, Idempotent()); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 3*time.Second, "the event stream opens", func() bool { return c.Status().Streaming })
	if during := runtime.NumGoroutine(); during <= before {
		t.Fatalf("the client runs goroutines: %d before, %d while it runs", before, during)
	}
	c.Close()
	if after := settledGoroutines(before); after > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines before New, %d after Close:\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}

func TestACancelDuringABackoffLeavesNothingBehind(t *testing.T) {
	f := needFleet(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, ns := newTestClient(t, f, func(cfg *Config) {
		cfg.Hooks.OnRetry = func(RetryEvent) {
			go func() { time.Sleep(50 * time.Millisecond); cancel() }()
		}
	})
	// The coordinator grants a 2 s backoff.
	f.admin(t, "PUT", "/admin/v1/"+ns+"/policies/deps/pay", map[string]any{"backoff": map[string]any{"baseMs": 2000, "capMs": 2000, "jitter": "none"}}, nil)
	dep := newScripted(t, 503)
	pay := c.Dependency("pay")
	if err := pay.Do(context.Background(), dep.get); err == nil {
		t.Fatal("want a give-up")
	}
	before := settledGoroutines(0)
	start := time.Now()
	err := pay.Do(ctx, dep.get, Idempotent())
	if !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Fatalf("want context.Canceled at once, got %v after %v", err, time.Since(start))
	}
	if len(dep.requests()) != 2 {
		t.Fatalf("no retry after the cancel: %d requests", len(dep.requests()))
	}
	if after := settledGoroutines(before); after > before {
		t.Fatalf("%d goroutines before the call, %d after its cancel", before, after)
	}
}
