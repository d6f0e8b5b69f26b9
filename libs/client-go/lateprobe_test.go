package sluice

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// lateProbeFleet is a coordinator whose breaker of pay is half-open. Its first admission answers
// after answerAfter, with the probe "late-probe" that lasts probeFor from then (and, with lease,
// the lease "probe-lease"); it refuses any other (the probe is out), and records the admissions,
// the probes reported and the leases released.
type lateProbeFleet struct {
	mu       sync.Mutex
	admits   int
	probes   []string
	released []string
	// answeredAt is when the first admission's answer was written.
	answeredAt time.Time
}

// probeFleetSetup is how a lateProbeFleet answers, and how its client waits.
type probeFleetSetup struct {
	probeFor, answerAfter, decisionTimeout time.Duration
	lease                                  bool
	// view is the breaker the view states (default half-open).
	view   string
	mutate func(*Config)
}

// newLateProbeClient: the first admission answers in 300 ms, after the caller stopped waiting (50 ms).
func newLateProbeClient(t *testing.T, probeFor time.Duration) (*Client, *lateProbeFleet) {
	return newProbeFleetClient(t, probeFleetSetup{probeFor: probeFor, answerAfter: 300 * time.Millisecond, decisionTimeout: 50 * time.Millisecond})
}

func newProbeFleetClient(t *testing.T, setup probeFleetSetup) (*Client, *lateProbeFleet) {
	fleet := &lateProbeFleet{}
	view := setup.view
	if view == "" {
		view = `{"state":"half_open"}`
	}
	s := stubCoordinator(t, func(n int, path string, body map[string]any, w http.ResponseWriter) {
		switch {
		case strings.HasSuffix(path, "/admit"):
			fleet.mu.Lock()
			fleet.admits++
			first := fleet.admits == 1
			fleet.mu.Unlock()
			if first {
				time.Sleep(setup.answerAfter)
				lease := ""
				if setup.lease {
					lease = fmt.Sprintf(`,"lease":{"id":"probe-lease","expiresAt":%d}`, time.Now().Add(10*time.Second).UnixMilli())
				}
				fleet.mu.Lock()
				fleet.answeredAt = time.Now()
				fleet.mu.Unlock()
				fmt.Fprintf(w, `{"allow":true,"reason":"granted","retryAfterMs":0,"breaker":{"state":"half_open"},"probe":{"token":"late-probe","expiresAt":%d}%s}`,
					time.Now().Add(setup.probeFor).UnixMilli(), lease)
				return
			}
			_, _ = w.Write([]byte(`{"allow":false,"reason":"breaker_open","retryAfterMs":1000,"breaker":{"state":"half_open"}}`))
		case strings.Contains(path, "/leases/"):
			fleet.mu.Lock()
			fleet.released = append(fleet.released, path[strings.LastIndex(path, "/")+1:])
			fleet.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		case strings.HasSuffix(path, "/reports"):
			deps, _ := body["deps"].([]any)
			for _, dep := range deps {
				probes, _ := dep.(map[string]any)["probes"].([]any)
				for _, p := range probes {
					p := p.(map[string]any)
					fleet.mu.Lock()
					fleet.probes = append(fleet.probes, fmt.Sprintf("%v:%v", p["token"], p["success"]))
					fleet.mu.Unlock()
				}
			}
			_, _ = w.Write([]byte(`{"deps":{}}`))
		default: // the view
			fmt.Fprintf(w, `{"breaker":%s}`, view)
		}
	})
	cfg := Config{
		BaseURLs: []string{s.URL}, Namespace: "shop", SkipStartCheck: true, NoEvents: true, Logger: testLogger{t},
		DecisionTimeout: setup.decisionTimeout, PollInterval: time.Hour, ReportInterval: time.Hour,
	}
	if setup.mutate != nil {
		setup.mutate(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, fleet
}

func (f *lateProbeFleet) seen() (admits int, probes []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.admits, append([]string(nil), f.probes...)
}

func (f *lateProbeFleet) leasesReleased() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.released...)
}

func keptProbes(d *Dependency) int {
	d.fleet.mu.Lock()
	defer d.fleet.mu.Unlock()
	return len(d.fleet.kept)
}

// goesOutAsTheKeptProbe checks that the next call goes out as the kept probe, without a second
// admission, and that its success is reported with the probe's token.
func goesOutAsTheKeptProbe(t *testing.T, pay *Dependency, dep *scripted, fleet *lateProbeFleet) {
	t.Helper()
	if err := pay.Do(context.Background(), dep.get); err != nil {
		t.Fatalf("the next call goes out as the kept probe: %v", err)
	}
	if n := len(dep.requests()); n != 1 {
		t.Fatalf("the dependency got %d requests, want 1", n)
	}
	eventually(t, 5*time.Second, "the probe's outcome is reported", func() bool {
		_, probes := fleet.seen()
		return len(probes) > 0
	})
	admits, probes := fleet.seen()
	if admits != 1 || len(probes) != 1 || probes[0] != "late-probe:true" {
		t.Fatalf("%d admissions, probes reported %v; want 1 and [late-probe:true]", admits, probes)
	}
}

// askTooLate makes a call whose admission comes too late (it gives up breaker_open without an
// attempt), and waits for the late answer's probe to be kept.
func askTooLate(t *testing.T, pay *Dependency, dep *scripted) {
	t.Helper()
	eventually(t, 5*time.Second, "the view is read", func() bool { return pay.BreakerState() == StateHalfOpen })
	var giveUp *GiveUpError
	if err := pay.Do(context.Background(), dep.get); !errors.As(err, &giveUp) || giveUp.Reason != ReasonBreakerOpen || giveUp.Attempts != 0 {
		t.Fatalf("without the fleet's answer in time the half-open breaker refuses: %v", err)
	}
	eventually(t, 5*time.Second, "the late probe is kept", func() bool { return keptProbes(pay) == 1 })
}

func TestALateProbeLetsTheNextCallOutWithoutAsking(t *testing.T) {
	c, fleet := newLateProbeClient(t, 10*time.Second)
	pay := c.Dependency("pay")
	dep := newScripted(t, 200)
	askTooLate(t, pay, dep)
	goesOutAsTheKeptProbe(t, pay, dep, fleet)
	// The probe went out once: the call after it asks again.
	_ = pay.Do(context.Background(), dep.get)
	if admits, _ := fleet.seen(); admits != 2 {
		t.Fatalf("%d admissions after the kept probe was used, want 2", admits)
	}
}

func TestAKeptProbeIsNotUsedOnceExpired(t *testing.T) {
	c, fleet := newLateProbeClient(t, 100*time.Millisecond)
	pay := c.Dependency("pay")
	dep := newScripted(t, 200)
	askTooLate(t, pay, dep)
	time.Sleep(150 * time.Millisecond)
	if err := pay.Do(context.Background(), dep.get); !errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("an expired probe lets nothing out: %v", err)
	}
	if admits, _ := fleet.seen(); admits != 2 || len(dep.requests()) != 0 {
		t.Fatalf("%d admissions, %d attempts; want 2 and 0", admits, len(dep.requests()))
	}
}

func TestAKeptProbeIsDroppedWhenTheBreakerLeavesHalfOpen(t *testing.T) {
	c, fleet := newLateProbeClient(t, 10*time.Second)
	pay := c.Dependency("pay")
	dep := newScripted(t, 200)
	askTooLate(t, pay, dep)
	// The breaker reopened (an event), and its open time is already over: half-open again, with
	// probes of its own.
	pay.fleet.applyState(StateOpen, true, time.Now().Add(-time.Millisecond).UnixMilli(), "")
	if err := pay.Do(context.Background(), dep.get); !errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("the dropped probe lets nothing out: %v", err)
	}
	if admits, _ := fleet.seen(); admits != 2 || len(dep.requests()) != 0 {
		t.Fatalf("%d admissions, %d attempts; want 2 and 0", admits, len(dep.requests()))
	}
}

// The answer would come in time for the decision (500 ms), not for the call (150 ms): the call
// gives up at its deadline without waiting for it, the attempt does not go out, and the late
// answer's lease goes back and its probe is kept.
func TestAnAdmissionPastTheDeadlineSendsNothingAndKeepsItsProbe(t *testing.T) {
	c, fleet := newProbeFleetClient(t, probeFleetSetup{
		probeFor: 10 * time.Second, answerAfter: 300 * time.Millisecond, decisionTimeout: 500 * time.Millisecond, lease: true,
	})
	pay := c.Dependency("pay")
	dep := newScripted(t, 200)
	eventually(t, 5*time.Second, "the view is read", func() bool { return pay.BreakerState() == StateHalfOpen })
	var giveUp *GiveUpError
	err := pay.Do(context.Background(), dep.get, Deadline(150*time.Millisecond))
	gaveUpAt := time.Now()
	if !errors.As(err, &giveUp) || giveUp.Reason != ReasonDeadlineExceeded || giveUp.Attempts != 0 {
		t.Fatalf("an admission past the deadline gives up deadline_exceeded with no attempt: %v", err)
	}
	eventually(t, 5*time.Second, "the late probe is kept", func() bool { return keptProbes(pay) == 1 })
	fleet.mu.Lock()
	answeredAt := fleet.answeredAt
	fleet.mu.Unlock()
	if !gaveUpAt.Before(answeredAt) {
		t.Fatalf("the call gave up %v after the admission's answer: it waited past its deadline", gaveUpAt.Sub(answeredAt))
	}
	if n := len(dep.requests()); n != 0 {
		t.Fatalf("the dependency got %d requests, want 0", n)
	}
	eventually(t, 5*time.Second, "the lease is released", func() bool {
		released := fleet.leasesReleased()
		return len(released) == 1 && released[0] == "probe-lease"
	})
	goesOutAsTheKeptProbe(t, pay, dep, fleet)
}

// The caller's context ends while the admission is under way: its probe is kept all the same.
func TestACallWhoseContextEndsDuringItsAdmissionKeepsItsProbe(t *testing.T) {
	c, fleet := newProbeFleetClient(t, probeFleetSetup{
		probeFor: 10 * time.Second, answerAfter: 300 * time.Millisecond, decisionTimeout: 500 * time.Millisecond,
	})
	pay := c.Dependency("pay")
	dep := newScripted(t, 200)
	eventually(t, 5*time.Second, "the view is read", func() bool { return pay.BreakerState() == StateHalfOpen })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(100*time.Millisecond, cancel)
	if err := pay.Do(ctx, dep.get); !errors.Is(err, context.Canceled) {
		t.Fatalf("the call ends with its context: %v", err)
	}
	eventually(t, 5*time.Second, "the probe is kept", func() bool { return keptProbes(pay) == 1 })
	if n := len(dep.requests()); n != 0 {
		t.Fatalf("the dependency got %d requests, want 0", n)
	}
	goesOutAsTheKeptProbe(t, pay, dep, fleet)
}

// The caller's context ends as the admission's answer is taken (the answer's half-open state, new
// to the client, is announced then): nothing is sent, and the probe is kept.
func TestACallWhoseContextEndsAsItIsAdmittedKeepsItsProbe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, fleet := newProbeFleetClient(t, probeFleetSetup{
		probeFor: 10 * time.Second, decisionTimeout: 500 * time.Millisecond,
		// Open, its open time over: half-open as the client counts, until the admission says so.
		view: fmt.Sprintf(`{"state":"open","openUntil":%d}`, time.Now().Add(-time.Second).UnixMilli()),
		mutate: func(cfg *Config) {
			cfg.Hooks.OnBreakerChange = func(ch BreakerChange) {
				if ch.To == StateHalfOpen {
					cancel()
				}
			}
		},
	})
	pay := c.Dependency("pay")
	dep := newScripted(t, 200)
	eventually(t, 5*time.Second, "the view is read", func() bool { return pay.BreakerState() == StateHalfOpen })
	if err := pay.Do(ctx, dep.get); !errors.Is(err, context.Canceled) {
		t.Fatalf("the call ends with its context: %v", err)
	}
	if n := len(dep.requests()); n != 0 {
		t.Fatalf("the dependency got %d requests, want 0", n)
	}
	if n := keptProbes(pay); n != 1 {
		t.Fatalf("%d probes kept, want 1", n)
	}
	goesOutAsTheKeptProbe(t, pay, dep, fleet)
}
