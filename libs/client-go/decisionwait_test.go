package sluice

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitingClient is a client whose decisions wait d (no coordinator is asked).
func waitingClient(t *testing.T, d time.Duration) *Client {
	c, err := New(Config{BaseURLs: []string{"http://127.0.0.1:9"}, Namespace: "shop", SkipStartCheck: true, Logger: NopLogger(), DecisionTimeout: d})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestADecisionsTimeRunsFromWhenItsRequestIsWritten(t *testing.T) {
	c := waitingClient(t, 20*time.Millisecond)
	p, settled := newProgress(), make(chan struct{})
	go func() {
		time.Sleep(60 * time.Millisecond) // the process, busy, writes the request late
		p.markWritten(time.Now())
		time.Sleep(5 * time.Millisecond)
		close(settled)
	}()
	answered, err := c.awaitDecision(context.Background(), p, settled)
	if err != nil || !answered {
		t.Fatalf("an answer 5 ms after the write is in time: answered %v, %v", answered, err)
	}
}

func TestAnAnswerBeingReadWhenTheTimeIsUpIsWaitedFor(t *testing.T) {
	done, arriving := make(chan struct{}), make(chan struct{})
	close(arriving)
	go func() {
		time.Sleep(30 * time.Millisecond)
		close(done)
	}()
	answered, err := within(context.Background(), done, arriving, time.Now(), time.Millisecond)
	if err != nil || !answered {
		t.Fatalf("an answer being read counts: answered %v, %v", answered, err)
	}
}

func TestNoAnswerIsLate(t *testing.T) {
	answered, err := within(context.Background(), make(chan struct{}), make(chan struct{}), time.Now().Add(5*time.Millisecond), 5*time.Millisecond)
	if answered || err != nil {
		t.Fatalf("no answer: answered %v, %v", answered, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := within(ctx, make(chan struct{}), nil, time.Now().Add(time.Hour), time.Hour); err != context.Canceled {
		t.Fatalf("a call that ends stops waiting: %v", err)
	}
}

func TestACallWaitsForTheAskUnderWayFromWhenItWasWritten(t *testing.T) {
	c := waitingClient(t, 20*time.Millisecond)
	underWay := &retryAsk{progress: newProgress(), settled: make(chan struct{})}
	askedAt := time.Now()
	go func() {
		time.Sleep(40 * time.Millisecond) // still in the coalescing window of a busy process
		underWay.progress.markWritten(time.Now())
		time.Sleep(5 * time.Millisecond)
		close(underWay.settled)
	}()
	if err := c.awaitUnderWay(context.Background(), underWay, askedAt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-underWay.settled:
	default:
		t.Fatal("the call stopped waiting before the ask under way had its time")
	}
}

func TestAWaiterThatNoticedLateGivesThePendingReadsAsLongAgain(t *testing.T) {
	done := make(chan struct{})
	go func() {
		time.Sleep(20 * time.Millisecond) // read once the process runs again
		close(done)
	}()
	// Noticed 40 ms after due: the process was busy, or not run.
	answered, err := within(context.Background(), done, make(chan struct{}), time.Now().Add(-40*time.Millisecond), 100*time.Millisecond)
	if err != nil || !answered {
		t.Fatalf("answered %v, %v", answered, err)
	}
}

// A retry ask whose answer would come in time for the decision (500 ms), not for the call
// (150 ms): the call gives up deadline_exceeded at its deadline, before the answer.
func TestARetryAskIsWaitedForUntilTheDeadlineAtMost(t *testing.T) {
	var mu sync.Mutex
	var answeredAt time.Time
	s := stubCoordinator(t, func(n int, path string, body map[string]any, w http.ResponseWriter) {
		switch {
		case strings.HasSuffix(path, "/retry") || strings.HasSuffix(path, "/retries"):
			time.Sleep(300 * time.Millisecond)
			mu.Lock()
			answeredAt = time.Now()
			mu.Unlock()
			w.WriteHeader(http.StatusServiceUnavailable)
		case strings.HasSuffix(path, "/reports"):
			_, _ = w.Write([]byte(`{"deps":{}}`))
		default: // the view
			_, _ = w.Write([]byte(`{"breaker":{"state":"closed"}}`))
		}
	})
	c, err := New(Config{
		BaseURLs: []string{s.URL}, Namespace: "shop", SkipStartCheck: true, NoEvents: true, Logger: testLogger{t},
		DecisionTimeout: 500 * time.Millisecond, PollInterval: time.Hour, ReportInterval: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	dep := newScripted(t, 503)
	var giveUp *GiveUpError
	err = c.Dependency("pay").Do(context.Background(), dep.get, Idempotent(), Deadline(150*time.Millisecond))
	gaveUpAt := time.Now()
	if !errors.As(err, &giveUp) || giveUp.Reason != ReasonDeadlineExceeded || giveUp.Attempts != 1 {
		t.Fatalf("the call gives up deadline_exceeded after its one attempt: %v", err)
	}
	eventually(t, 5*time.Second, "the ask is answered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !answeredAt.IsZero()
	})
	mu.Lock()
	defer mu.Unlock()
	if !gaveUpAt.Before(answeredAt) {
		t.Fatalf("the call gave up %v after the ask's answer: it waited past its deadline", gaveUpAt.Sub(answeredAt))
	}
}
