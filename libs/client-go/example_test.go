package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	sluice "github.com/sluice-dev/sluice/libs/client-go"
)

// The quick start: New checks the token with the coordinator, so a refused token or a wrong URL
// is an error here rather than a surprise at the first outage.
func ExampleNew() {
	client, err := sluice.New(sluice.Config{
		BaseURLs:  []string{"http://127.0.0.1:8080"},
		Namespace: "shop",
		Token:     os.Getenv("SLUICE_TOKEN"),
	})
	if err != nil {
		var refused *sluice.ConfigError
		if errors.As(err, &refused) {
			log.Fatalf("check SLUICE_TOKEN: %v", err)
		}
		log.Fatal(err)
	}
	defer client.Close()
}

// An example client: its coordinator is not running, which a call through a closed breaker never
// notices (the first attempt goes out without asking anyone).
func exampleClient() *sluice.Client {
	client, err := sluice.New(sluice.Config{
		BaseURLs:       []string{"http://127.0.0.1:1"},
		Namespace:      "shop",
		SkipStartCheck: true,
		Logger:         sluice.NopLogger(),
	})
	if err != nil {
		log.Fatal(err)
	}
	return client
}

func ExampleDependency_Do() {
	client := exampleClient()
	defer client.Close()

	payments := client.Dependency("payments-api")
	err := payments.Do(context.Background(), func(ctx context.Context) error {
		fmt.Println("charging, attempt", sluice.Attempt(ctx))
		return nil // or a *sluice.StatusError for a failed answer, or the transport's error
	}, sluice.Idempotent())
	fmt.Println("error:", err)
	// Output:
	// charging, attempt 1
	// error: <nil>
}

func ExampleClient_Transport() {
	client := exampleClient()
	defer client.Close()
	inventory := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "attempt %s, idempotency key %s", r.Header.Get("sluice-attempt"), r.Header.Get("Idempotency-Key"))
	}))
	defer inventory.Close()

	httpClient := &http.Client{Transport: client.Transport("inventory", http.DefaultTransport)}
	ctx := sluice.WithCallOptions(context.Background(), sluice.IdempotencyKey("reserve-42"))
	req, _ := http.NewRequestWithContext(ctx, "POST", inventory.URL+"/reservations", nil)
	res, err := httpClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.StatusCode, string(body))
	// Output: 200 attempt 1, idempotency key reserve-42
}

func ExampleMiddleware() {
	handler := sluice.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deadline, _ := r.Context().Deadline()
		fmt.Println("serving attempt", sluice.ServingAttempt(r.Context()), "with at most", time.Until(deadline).Round(time.Second), "left")
	}))
	req := httptest.NewRequest("GET", "/orders/42", nil)
	req.Header.Set("sluice-deadline-ms", "3000")
	req.Header.Set("sluice-attempt", "2")
	handler.ServeHTTP(httptest.NewRecorder(), req)
	// Output: serving attempt 2 with at most 3s left
}

func ExampleGiveUpError() {
	// What Do returns when an operator tripped the breaker of a dependency.
	var err error = &sluice.GiveUpError{
		Dependency: "payments-api",
		Reason:     sluice.ReasonBreakerOpen,
		Breaker:    &sluice.BreakerInfo{State: sluice.StateForcedOpen, OperatorReason: "bad deploy"},
	}
	var giveUp *sluice.GiveUpError
	if errors.As(err, &giveUp) && errors.Is(err, sluice.ErrBreakerOpen) {
		fmt.Println(giveUp.Reason, giveUp.OperatorReason())
	}
	fmt.Println(err)
	// Output:
	// breaker_open bad deploy
	// payments-api: the circuit breaker is forced_open (bad deploy)
}

func ExampleClassify() {
	failure := sluice.Classify(&sluice.StatusError{StatusCode: 429, RetryAfter: 2 * time.Second}, nil)
	fmt.Println(failure.Status, failure.RetryAfter, sluice.IsDependencyFailure(failure))
	fmt.Println(sluice.IsDependencyFailure(sluice.Classify(&sluice.StatusError{StatusCode: 404}, nil)))
	// Output:
	// 429 2s true
	// false
}

func ExampleParseRetryAfter() {
	d, ok := sluice.ParseRetryAfter("3", time.Now())
	fmt.Println(d, ok)
	// Output: 3s true
}
