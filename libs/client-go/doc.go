// Package sluice is the Go client of Sluice, the fleet-wide retry and overload coordinator: every
// process of a fleet, in any language, shares one retry budget and one circuit breaker per
// dependency, held by the coordinator.
//
//	client, err := sluice.New(sluice.Config{
//		BaseURLs:  []string{"http://127.0.0.1:8080"},
//		Namespace: "shop",
//		Token:     os.Getenv("SLUICE_TOKEN"),
//	})
//	if err != nil {
//		return err // a refused token or a wrong URL is loud here
//	}
//	defer client.Close() // stops every goroutine it started
//
//	payments := client.Dependency("payments-api")
//	err = payments.Do(ctx, func(ctx context.Context) error { return charge(ctx, order) }, sluice.Idempotent())
//
//	httpClient := &http.Client{Transport: client.Transport("payments-api", http.DefaultTransport)}
//	handler = sluice.Middleware(handler) // reads sluice-deadline-ms into the request's context
//
// What a call does: through a closed breaker its first attempt goes out at once, with no request
// to the coordinator and no allocation; its outcome is counted and reported with every other
// call's every ReportInterval (200 ms). A failure that is the dependency's (no answer, 408, 429,
// 5xx) and may be retried (an idempotent call, or one with an idempotency key after a failure that
// says the request was not processed) asks the coordinator for a retry (POST …/retry with a
// requestId; simultaneous asks of the process go as one POST /retries), after waiting out the
// dependency's Retry-After, and waits the granted backoff. A denial that says when to ask again is
// repeated locally until then, without a request; after a Retry-After, a budget_exhausted denial
// that frees within it is waited for once and asked again. The breaker state comes over Server-Sent Events
// (polled while the stream is down), so an operator's trip fails the next call of every process
// with the operator's reason. Through a half-open breaker, or to a rate- or concurrency-limited
// dependency, an attempt is admitted first (POST …/admit); a probe granted in an answer that came
// too late is kept, and the dependency's next attempt goes out as it without asking, until it
// expires or the breaker leaves half-open. An admission, like a retry ask, is waited for until
// the call's deadline at most; so is kept the probe of an admission whose call's deadline passed
// or whose context ended first: that call gives up without sending its attempt. When the
// coordinator stops answering, a local budget
// and breaker take over, with this process's share of the fleet's floor, until it answers again.
//
// Deadlines come from the context: a call's deadline is ctx's, or a Deadline (per call, or the
// dependency's) when that comes first; every attempt, retry and backoff stays within it, and the
// Transport writes what is left of it to sluice-deadline-ms. With neither, a default of 10 s
// bounds the retries and backoff, and the first attempt runs with ctx as it is.
//
// Errors: Do returns a *GiveUpError when a failure is not retried (again), with the reason, the
// number of attempts and the last attempt's error (errors.As and errors.Is see through it); a
// breaker_open give-up carries the breaker's state and the operator's reason. The sentinels
// ErrBudgetExhausted, ErrBreakerOpen and the others match give-ups by reason.
//
// Logging goes to a Logger, which a *slog.Logger satisfies; events go to Hooks.
package sluice
