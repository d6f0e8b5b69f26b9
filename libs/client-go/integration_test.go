package sluice

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

func TestStartCheckRefusesAWrongToken(t *testing.T) {
	f := needFleet(t)
	_, err := New(Config{BaseURLs: f.urls, Namespace: "shop", Token: "not-a-token", Logger: NopLogger()})
	var cfg *ConfigError
	if !errors.As(err, &cfg) || cfg.Status != 401 {
		t.Fatalf("want a 401 ConfigError, got %v", err)
	}
}

func TestStartCheckFailsOnAWrongURL(t *testing.T) {
	ports, _ := spareTCPPorts(1)
	_, err := New(Config{BaseURLs: []string{"http://127.0.0.1:" + itoa(ports[0])}, Namespace: "shop", Logger: NopLogger()})
	var ce *CoordinatorError
	if !errors.As(err, &ce) {
		t.Fatalf("want a CoordinatorError, got %v", err)
	}
}

func itoa(n int) string { return fmtInt(n) }

func TestDoRetriesWithTheFleetsGrant(t *testing.T) {
	f := needFleet(t)
	var retries []RetryEvent
	c, ns := newTestClient(t, f, func(cfg *Config) {
		cfg.Hooks.OnRetry = func(e RetryEvent) { retries = append(retries, e) }
	})
	dep := newScripted(t, 503, 503, 200)
	err := c.Dependency("pay").Do(context.Background(), dep.get, Idempotent())
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	got := dep.requests()
	if len(got) != 3 || len(retries) != 2 {
		t.Fatalf("want 3 attempts and 2 retries, got %d and %d", len(got), len(retries))
	}
	for i, h := range got {
		if h.Get(AttemptHeader) != itoa(i+1) {
			t.Errorf("attempt %d sent sluice-attempt %q", i+1, h.Get(AttemptHeader))
		}
	}
	if v := f.view(t, ns, "pay"); v.Budget.Retries != 2 {
		t.Fatalf("the fleet's budget counts %d retries, want 2", v.Budget.Retries)
	}
}

func TestAnOperatorsTripFailsTheNextCallWithItsReason(t *testing.T) {
	f := needFleet(t)
	var mu sync.Mutex
	var changes []BreakerChange
	c, ns := newTestClient(t, f, func(cfg *Config) {
		cfg.Hooks.OnBreakerChange = func(ch BreakerChange) { mu.Lock(); changes = append(changes, ch); mu.Unlock() }
	})
	pay := c.Dependency("pay")
	dep := newScripted(t, 200)
	if err := pay.Do(context.Background(), dep.get); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Second, "the event stream opens", func() bool { return c.Status().Streaming })
	f.admin(t, "POST", "/admin/v1/"+ns+"/breakers/pay/trip", map[string]any{"reason": "bad deploy"}, nil)
	eventually(t, 3*time.Second, "the trip reaches the client", func() bool { return pay.BreakerState() == StateForcedOpen })
	err := pay.Do(context.Background(), dep.get)
	var giveUp *GiveUpError
	if !errors.As(err, &giveUp) || giveUp.Reason != ReasonBreakerOpen || giveUp.OperatorReason() != "bad deploy" {
		t.Fatalf("want a breaker_open give-up with the operator's reason, got %v", err)
	}
	if !errors.Is(err, ErrBreakerOpen) || giveUp.Attempts != 0 || len(dep.requests()) != 1 {
		t.Fatalf("the call must not reach the dependency: %v, %d requests", err, len(dep.requests()))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(changes) != 1 || changes[0].To != StateForcedOpen || changes[0].Source != "fleet" || changes[0].OperatorReason != "bad deploy" {
		t.Fatalf("one breaker change announced, to forced_open by the fleet: %+v", changes)
	}
}

func TestReportsCountFirstAttempts(t *testing.T) {
	f := needFleet(t)
	c, ns := newTestClient(t, f, nil)
	dep := newScripted(t, 200)
	for i := 0; i < 10; i++ {
		if err := c.Dependency("inventory").Do(context.Background(), dep.get); err != nil {
			t.Fatal(err)
		}
	}
	c.Flush()
	if v := f.view(t, ns, "inventory"); v.Budget.Requests != 10 {
		t.Fatalf("the fleet counts %d requests, want 10", v.Budget.Requests)
	}
}

func TestARetryThatSucceededIsReportedOnce(t *testing.T) {
	f := needFleet(t)
	c, ns := newTestClient(t, f, func(cfg *Config) { cfg.ReportInterval = time.Minute })
	dep := newScripted(t, 503, 503, 200)
	pay := c.Dependency("pay")
	if err := pay.Do(context.Background(), dep.get, Idempotent()); err != nil {
		t.Fatal(err)
	}
	pay.fleet.mu.Lock()
	succeeded := pay.fleet.pending.retriesSucceeded
	pay.fleet.mu.Unlock()
	if succeeded != 1 {
		t.Fatalf("two granted retries, the second succeeded: %d counted, want 1", succeeded)
	}
	c.Flush()
	var view struct {
		Budget struct {
			Requests         int  `json:"requests"`
			RetriesSucceeded *int `json:"retriesSucceeded"`
		} `json:"budget"`
	}
	f.admin(t, "GET", "/v1/"+ns+"/deps/pay", nil, &view)
	switch {
	case view.Budget.RetriesSucceeded != nil:
		// A coordinator with adaptive budgets takes the field.
		if *view.Budget.RetriesSucceeded != 1 || c.reporter.noSucceeded.Load() {
			t.Fatalf("the fleet counts %d retries that succeeded, want 1", *view.Budget.RetriesSucceeded)
		}
	case !c.reporter.noSucceeded.Load():
		t.Fatal("a coordinator without adaptive budgets refused the field: the reporter must stop sending it")
	}
	if view.Budget.Requests != 1 {
		t.Fatalf("the report reached the fleet: %d requests, want 1", view.Budget.Requests)
	}
}

func TestAGiveUpWhileServingARetryIsPushedBack(t *testing.T) {
	f := needFleet(t)
	c, _ := newTestClient(t, f, nil)
	dep := newScripted(t, 503)
	var served error
	handler := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served = c.Dependency("pay").Do(r.Context(), dep.get, Idempotent())
		w.WriteHeader(502)
	}))
	req := httptest.NewRequest("GET", "/orders/42", nil)
	req.Header.Set("sluice-attempt", "2")
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	if !errors.Is(served, &reasonSentinel{ReasonUpstreamRetry}) || len(dep.requests()) != 1 {
		t.Fatalf("serving a retry, the call is not retried: %v after %d attempts", served, len(dep.requests()))
	}
	if got := rec.Header().Get("sluice-no-retry"); got != "upstream_retry" {
		t.Fatalf("the response says sluice-no-retry %q, want upstream_retry", got)
	}
}
