package sluice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestClassifyFollowsTheProtocol(t *testing.T) {
	cases := []struct {
		err  error
		want Failure
	}{
		{&StatusError{StatusCode: 503, RetryAfter: time.Second}, Failure{Status: 503, RetryAfter: time.Second}},
		{fmt.Errorf("wrapped: %w", &StatusError{StatusCode: 404}), Failure{Status: 404}},
		{&StatusError{StatusCode: 502, NoRetry: "budget_exhausted"}, Failure{Status: 502, RetriedDownstream: true}},
		{context.DeadlineExceeded, Failure{Kind: KindTimeout}},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), Failure{Kind: KindConnection}},
		{io.ErrUnexpectedEOF, Failure{Kind: KindConnection}},
		{errors.New("something else"), Failure{Kind: KindOther}},
	}
	for _, c := range cases {
		if got := Classify(c.err, nil); got != c.want {
			t.Errorf("Classify(%v) = %+v, want %+v", c.err, got, c.want)
		}
	}
	custom := func(err error) (Failure, bool) { return Failure{Status: 429}, true }
	if got := Classify(errors.New("quota"), []Classifier{custom}); got.Status != 429 {
		t.Errorf("a classifier goes first: %+v", got)
	}
}

func TestRetryDenialFollowsTheProtocol(t *testing.T) {
	cases := []struct {
		f                  Failure
		idempotent, hasKey bool
		want               Reason
	}{
		{Failure{Status: 404}, true, true, "not_retriable"},
		{Failure{Status: 500}, true, false, ""},
		{Failure{Status: 500}, false, true, ReasonNotIdempotent},
		{Failure{Status: 503}, false, true, ""},
		{Failure{Status: 429}, false, true, ""},
		{Failure{Kind: KindTimeout}, false, true, ""},
		{Failure{Status: 503}, false, false, ReasonNotIdempotent},
	}
	for _, c := range cases {
		if got := retryDenial(c.f, c.idempotent, c.hasKey); got != c.want {
			t.Errorf("retryDenial(%+v, %v, %v) = %q, want %q", c.f, c.idempotent, c.hasKey, got, c.want)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	half := func() float64 { return 0.5 }
	b := Backoff{BaseMs: 50, CapMs: 2000, Jitter: "full"}
	if got := b.delayMs(3, 0, half); got != 100 {
		t.Errorf("full jitter of 200 at 0.5 = %d, want 100", got)
	}
	if got := (Backoff{BaseMs: 50, CapMs: 2000, Jitter: "none"}).delayMs(10, 0, half); got != 2000 {
		t.Errorf("capped = %d, want 2000", got)
	}
	if got := b.delayMs(1, 3000, half); got != 3000 {
		t.Errorf("Retry-After is a floor: %d", got)
	}
	if got := (Backoff{BaseMs: 50, CapMs: 2000, Jitter: "decorrelated"}).delayMs(2, 0, half); got != 100 {
		t.Errorf("decorrelated = %d, want 100", got)
	}
}

func TestBudgetRules(t *testing.T) {
	// floor(0.29 × 100) is 29, not the binary fraction's 28.
	if got := budgetLimit(0.29, 0, 10, 100); got != 29 {
		t.Errorf("budgetLimit = %d, want 29", got)
	}
	fixed := retryBudgetPolicy{Mode: "fixed", Ratio: 0.1, MinRetriesPerSecond: 1, WindowSeconds: 10}
	// 100 requests: a limit of 10 + 10 = 20; an adaptive cap of 50 + 10 = 60.
	if !retryFits(fixed, 1, 19, 0, 100) || retryFits(fixed, 1, 20, 5, 100) {
		t.Error("fixed: 20 retries fit, a 21st does not, whatever succeeded")
	}
	adaptive := fixed
	adaptive.Mode = "adaptive"
	if !retryFits(adaptive, 1, 20, 5, 100) || retryFits(adaptive, 1, 60, 59, 100) {
		t.Error("adaptive: succeeded retries give their grants back, up to the cap")
	}
	if retryFits(adaptive, 0.5, 5, 0, 0) {
		t.Error("a share of 0.5 halves the floor")
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2015, 10, 21, 7, 27, 58, 0, time.UTC)
	if d, ok := ParseRetryAfter("3", now); !ok || d != 3*time.Second {
		t.Errorf("seconds: %v %v", d, ok)
	}
	if d, ok := ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", now); !ok || d != 2*time.Second {
		t.Errorf("date: %v %v", d, ok)
	}
	if _, ok := ParseRetryAfter("-1", now); ok {
		t.Error("a negative value is malformed")
	}
}

func TestGiveUpErrorWorksWithErrorsIsAndAs(t *testing.T) {
	last := &StatusError{StatusCode: 503}
	var err error = fmt.Errorf("charge: %w", &GiveUpError{Dependency: "pay", Reason: ReasonBudgetExhausted, Attempts: 1, Err: last})
	var giveUp *GiveUpError
	var status *StatusError
	if !errors.As(err, &giveUp) || !errors.As(err, &status) || status.StatusCode != 503 {
		t.Fatal("errors.As finds the give-up and its last error")
	}
	if !errors.Is(err, ErrGiveUp) || !errors.Is(err, ErrBudgetExhausted) || errors.Is(err, ErrBreakerOpen) {
		t.Fatal("errors.Is matches the reason's sentinel only")
	}
	deadline := &GiveUpError{Reason: ReasonDeadlineExceeded}
	if !errors.Is(deadline, context.DeadlineExceeded) {
		t.Fatal("a deadline give-up is context.DeadlineExceeded")
	}
}

func TestMiddlewareReadsTheHeadersIntoTheContext(t *testing.T) {
	var deadline time.Time
	var attempt int
	var key string
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deadline, _ = r.Context().Deadline()
		attempt = ServingAttempt(r.Context())
		key = IncomingIdempotencyKey(r.Context())
	}))
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("sluice-deadline-ms", "800")
	req.Header.Set("sluice-attempt", "2")
	req.Header.Set("Idempotency-Key", "k-1")
	start := time.Now()
	h.ServeHTTP(httptest.NewRecorder(), req)
	if left := deadline.Sub(start); left <= 700*time.Millisecond || left > 801*time.Millisecond {
		t.Errorf("the deadline is %v away, want about 800 ms", left)
	}
	if attempt != 2 || key != "k-1" {
		t.Errorf("attempt %d, key %q", attempt, key)
	}
	req = httptest.NewRequest("GET", "/", nil)
	req.Header.Set("sluice-deadline-ms", "soon")
	req.Header.Set("sluice-attempt", "0")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if !deadline.IsZero() || attempt != 1 {
		t.Errorf("malformed headers are ignored: %v %d", deadline, attempt)
	}
}

// stubCoordinator answers each request with answer(n, request body), n counting from 1.
func stubCoordinator(t *testing.T, answer func(n int, path string, body map[string]any, w http.ResponseWriter)) *httptest.Server {
	var mu sync.Mutex
	n := 0
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		answer(k, r.URL.Path, body, w)
	}))
	t.Cleanup(s.Close)
	return s
}

func TestAnAskWithNoAnswerIsAskedAgainWithTheSameRequestID(t *testing.T) {
	var ids []any
	s := stubCoordinator(t, func(n int, path string, body map[string]any, w http.ResponseWriter) {
		ids = append(ids, body["requestId"])
		if n == 1 {
			w.WriteHeader(503)
			_, _ = w.Write([]byte(`{"code":"store_unavailable"}`))
			return
		}
		_, _ = w.Write([]byte(`{"allow":true,"reason":"granted","delayMs":1,"breaker":{"state":"closed"}}`))
	})
	c := newCoordinator([]string{s.URL}, "shop", "", 100*time.Millisecond)
	var out retryDecision
	err := c.call(context.Background(), exchange{method: "POST", path: "deps/pay/retry", body: retryRequest{Attempt: 1, RequestID: "id-1"}, timeout: time.Second, repeatable: true, out: &out})
	if err != nil || !out.Allow || len(ids) != 2 || ids[0] != "id-1" || ids[1] != "id-1" {
		t.Fatalf("err %v, allow %v, ids %v", err, out.Allow, ids)
	}
	// A report (no id) is not asked again after an unknown outcome.
	ids = nil
	s2 := stubCoordinator(t, func(n int, path string, body map[string]any, w http.ResponseWriter) {
		ids = append(ids, path)
		w.WriteHeader(503)
	})
	c2 := newCoordinator([]string{s2.URL}, "shop", "", 100*time.Millisecond)
	if err := c2.call(context.Background(), exchange{method: "POST", path: "reports", body: map[string]any{}, timeout: time.Second}); err == nil || len(ids) != 1 {
		t.Fatalf("a report is sent once: %v, %v", err, ids)
	}
}

func TestAnOverloadedInstanceSendsTheRequestToTheNext(t *testing.T) {
	var shed, served int
	overloaded := stubCoordinator(t, func(n int, path string, body map[string]any, w http.ResponseWriter) {
		shed++
		w.WriteHeader(503)
		_, _ = w.Write([]byte(`{"statusCode":503,"code":"overloaded"}`))
	})
	healthy := stubCoordinator(t, func(n int, path string, body map[string]any, w http.ResponseWriter) {
		served++
		_, _ = w.Write([]byte(`{"deps":{}}`))
	})
	c := newCoordinator([]string{overloaded.URL, healthy.URL}, "shop", "", 100*time.Millisecond)
	if err := c.call(context.Background(), exchange{method: "POST", path: "reports", body: map[string]any{}, timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	if shed != 1 || served != 1 || c.current.Load() != 1 {
		t.Fatalf("shed %d, served %d, current %d", shed, served, c.current.Load())
	}
	l := &link{failuresNeeded: 1, logger: NopLogger(), hooks: &Hooks{}}
	if l.failed("retry", &CoordinatorError{Status: 503, Code: "overloaded"}, time.Time{}) || l.fallback.Load() {
		t.Fatal("an overloaded answer is no evidence of an outage")
	}
	if !l.failed("retry", &CoordinatorError{Status: 503, Code: "store_unavailable"}, time.Time{}) {
		t.Fatal("a store_unavailable answer is")
	}
}
