package sluice

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"
)

func TestABudgetDenialIsHeldWithoutAskingAgain(t *testing.T) {
	f := needFleet(t)
	c, ns := newTestClient(t, f, func(cfg *Config) { cfg.ReportInterval = time.Minute })
	// A budget of floor(0 × requests + 0.1/s × 10 s) = 1 retry.
	f.admin(t, "PUT", "/admin/v1/"+ns+"/policies/deps/pay", map[string]any{
		"retryBudget": map[string]any{"ratio": 0, "minRetriesPerSecond": 0.1, "windowSeconds": 10},
		"backoff":     map[string]any{"baseMs": 1, "capMs": 1, "jitter": "none"},
	}, nil)
	dep := newScripted(t, 503)
	pay := c.Dependency("pay")
	err := pay.Do(context.Background(), dep.get, Idempotent())
	if !errors.Is(err, ErrBudgetExhausted) || len(dep.requests()) != 2 {
		t.Fatalf("want one granted retry, then budget_exhausted: %v after %d attempts", err, len(dep.requests()))
	}
	asked := c.DecisionRequests()
	for i := 0; i < 5; i++ {
		if err := pay.Do(context.Background(), dep.get, Idempotent()); !errors.Is(err, ErrBudgetExhausted) {
			t.Fatalf("want the held denial, got %v", err)
		}
	}
	if c.DecisionRequests() != asked {
		t.Fatalf("the held denial asked the coordinator %d more times", c.DecisionRequests()-asked)
	}
	// A report reaching the coordinator lets the held denial lapse: the next failure asks again.
	c.Flush()
	_ = pay.Do(context.Background(), dep.get, Idempotent())
	if c.DecisionRequests() != asked+1 {
		t.Fatalf("after a report the next retry is asked: %d asks, want %d", c.DecisionRequests(), asked+1)
	}
}

// gathering answers 503 to its first n requests together, once all n have come, then 200.
func gathering(t *testing.T, n int) *scripted {
	s := newScripted(t, 200)
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	inner := s.server.Handler
	s.server.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived++
		k := arrived
		if k == n {
			close(all)
		}
		mu.Unlock()
		if k <= n {
			<-all
			w.WriteHeader(503)
			return
		}
		inner.ServeHTTP(w, r)
	})
	return s
}

func TestSimultaneousFailuresShareOneAsk(t *testing.T) {
	f := needFleet(t)
	// A decision time that a loaded test machine (and the race detector) leaves room for.
	c, ns := newTestClient(t, f, func(cfg *Config) { cfg.DecisionTimeout = time.Second })
	// 40 failures must not open the breaker here: this is about the asks.
	f.admin(t, "PUT", "/admin/v1/"+ns+"/policies/deps/pay", map[string]any{"breaker": map[string]any{"minimumCalls": 1000}}, nil)
	const calls = 40
	dep := gathering(t, calls)
	pay := c.Dependency("pay")
	if err := pay.Do(context.Background(), newScripted(t, 200).get); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- pay.Do(context.Background(), dep.get, Idempotent())
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("every call is retried and succeeds: %v", err)
		}
	}
	if asked := c.DecisionRequests(); asked > 3 {
		t.Fatalf("%d simultaneous failures made %d decision requests, want at most 3", calls, asked)
	}
}

func TestTheTransportSendsTheProtocolsHeaders(t *testing.T) {
	f := needFleet(t)
	c, _ := newTestClient(t, f, nil)
	dep := newScripted(t, 503, 200)
	hc := &http.Client{Transport: c.Transport("pay", nil)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(WithCallOptions(ctx, IdempotencyKey("order-42")), "POST", dep.url+"/charge", nil)
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	got := dep.requests()
	if res.StatusCode != 200 || len(got) != 2 {
		t.Fatalf("status %d after %d attempts", res.StatusCode, len(got))
	}
	var deadlines []int64
	for i, h := range got {
		if h.Get("Idempotency-Key") != "order-42" || h.Get("sluice-attempt") != itoa(i+1) {
			t.Fatalf("attempt %d headers %v", i+1, h)
		}
		ms, ok := intHeader(h.Get("sluice-deadline-ms"), 1, 5000)
		if !ok {
			t.Fatalf("attempt %d sluice-deadline-ms %q", i+1, h.Get("sluice-deadline-ms"))
		}
		deadlines = append(deadlines, ms)
	}
	if deadlines[1] >= deadlines[0] {
		t.Fatalf("the deadline shrinks: %v", deadlines)
	}
	// A POST without a key is not retried: the give-up carries the answer.
	dep = newScripted(t, 502)
	req, _ = http.NewRequest("POST", dep.url+"/charge", nil)
	_, err = hc.Do(req)
	var giveUp *GiveUpError
	var status *StatusError
	if !errors.As(err, &giveUp) || giveUp.Reason != ReasonNotIdempotent || !errors.As(err, &status) || status.StatusCode != 502 {
		t.Fatalf("want a not_idempotent give-up around the 502, got %v", err)
	}
}
