package sluice

import "time"

// Hooks are called on the client's events, synchronously, on the goroutine that caused them: keep
// them short. Any of them may be nil.
type Hooks struct {
	// OnRetry: a retry is about to wait its backoff and go out.
	OnRetry func(RetryEvent)
	// OnGiveUp: a call that failed is not retried (again).
	OnGiveUp func(GiveUpEvent)
	// OnBreakerChange: the breaker state that governs a dependency's calls changed.
	OnBreakerChange func(BreakerChange)
	// OnFallback: the client switched to its local fallback (Active) or back.
	OnFallback func(FallbackChange)
	// OnConfigError: the coordinator refuses the client's token.
	OnConfigError func(ConfigErrorEvent)
}

// RetryEvent says a retry is about to go out after Delay.
type RetryEvent struct {
	Dependency string
	// Attempt is the attempt about to go out (2 for the first retry).
	Attempt int
	Delay   time.Duration
	// Err is the failed attempt's error.
	Err error
}

// GiveUpEvent says a call gave up.
type GiveUpEvent struct {
	Dependency string
	Reason     Reason
	Err        *GiveUpError
}

// BreakerChange is a breaker state change as the client sees it: pushed by the fleet (Source
// "fleet"), or made by the local fallback breaker ("local").
type BreakerChange struct {
	Dependency string
	From, To   string
	Source     string
	// OperatorReason is the operator's reason for a forced state, when known.
	OperatorReason string
}

// FallbackChange says the client switched to its local fallback (Active) or back to the fleet.
type FallbackChange struct {
	Active bool
	// During is what the client was doing when it noticed: retry, report, poll, events, admit.
	During string
	Err    error
}

// ConfigErrorEvent says the coordinator refused the client's token.
type ConfigErrorEvent struct {
	Err    *ConfigError
	During string
}
