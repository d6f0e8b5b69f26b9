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
// after the caller stopped waiting, with the probe "late-probe" that lasts probeFor from then; it
// refuses any other (the probe is out), and records the admissions and the probes reported.
type lateProbeFleet struct {
	mu     sync.Mutex
	admits int
	probes []string
}

func newLateProbeClient(t *testing.T, probeFor time.Duration) (*Client, *lateProbeFleet) {
	fleet := &lateProbeFleet{}
	s := stubCoordinator(t, func(n int, path string, body map[string]any, w http.ResponseWriter) {
		switch {
		case strings.HasSuffix(path, "/admit"):
			fleet.mu.Lock()
			fleet.admits++
			first := fleet.admits == 1
			fleet.mu.Unlock()
			if first {
				time.Sleep(300 * time.Millisecond) // the caller waits 50 ms
				fmt.Fprintf(w, `{"allow":true,"reason":"granted","retryAfterMs":0,"breaker":{"state":"half_open"},"probe":{"token":"late-probe","expiresAt":%d}}`,
					time.Now().Add(probeFor).UnixMilli())
				return
			}
			_, _ = w.Write([]byte(`{"allow":false,"reason":"breaker_open","retryAfterMs":1000,"breaker":{"state":"half_open"}}`))
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
			_, _ = w.Write([]byte(`{"breaker":{"state":"half_open"}}`))
		}
	})
	c, err := New(Config{
		BaseURLs: []string{s.URL}, Namespace: "shop", SkipStartCheck: true, NoEvents: true, Logger: testLogger{t},
		DecisionTimeout: 50 * time.Millisecond, PollInterval: time.Hour, ReportInterval: time.Hour,
	})
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

// askTooLate makes a call whose admission comes too late (it gives up breaker_open without an
// attempt), and waits for the late answer's probe to be kept.
func askTooLate(t *testing.T, pay *Dependency, dep *scripted) {
	t.Helper()
	eventually(t, 5*time.Second, "the view is read", func() bool { return pay.BreakerState() == StateHalfOpen })
	var giveUp *GiveUpError
	if err := pay.Do(context.Background(), dep.get); !errors.As(err, &giveUp) || giveUp.Reason != ReasonBreakerOpen || giveUp.Attempts != 0 {
		t.Fatalf("without the fleet's answer in time the half-open breaker refuses: %v", err)
	}
	eventually(t, 5*time.Second, "the late probe is kept", func() bool {
		pay.fleet.mu.Lock()
		defer pay.fleet.mu.Unlock()
		return len(pay.fleet.kept) == 1
	})
}

func TestALateProbeLetsTheNextCallOutWithoutAsking(t *testing.T) {
	c, fleet := newLateProbeClient(t, 10*time.Second)
	pay := c.Dependency("pay")
	dep := newScripted(t, 200)
	askTooLate(t, pay, dep)
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
