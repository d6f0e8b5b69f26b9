package sluice

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Reason says why a call that failed was not retried (again).
type Reason string

// The give-up reasons. The coordinator's own are budget_exhausted, breaker_open,
// deadline_exceeded, max_attempts and not_idempotent; the rest are the client's.
const (
	ReasonBudgetExhausted        Reason = "budget_exhausted"
	ReasonBreakerOpen            Reason = "breaker_open"
	ReasonDeadlineExceeded       Reason = "deadline_exceeded"
	ReasonMaxAttempts            Reason = "max_attempts"
	ReasonNotIdempotent          Reason = "not_idempotent"
	ReasonUpstreamRetry          Reason = "upstream_retry"
	ReasonDownstreamRetried      Reason = "downstream_retried"
	ReasonCoordinatorUnavailable Reason = "coordinator_unavailable"
	ReasonConfigError            Reason = "config_error"
	ReasonRateLimited            Reason = "rate_limited"
	ReasonConcurrencyLimited     Reason = "concurrency_limited"
)

// Sentinels for errors.Is: a *GiveUpError is each of ErrGiveUp and the sentinel of its reason. A
// deadline_exceeded give-up is also context.DeadlineExceeded.
var (
	ErrGiveUp                 error = &reasonSentinel{}
	ErrBudgetExhausted        error = &reasonSentinel{ReasonBudgetExhausted}
	ErrBreakerOpen            error = &reasonSentinel{ReasonBreakerOpen}
	ErrDeadlineExceeded       error = &reasonSentinel{ReasonDeadlineExceeded}
	ErrMaxAttempts            error = &reasonSentinel{ReasonMaxAttempts}
	ErrNotIdempotent          error = &reasonSentinel{ReasonNotIdempotent}
	ErrCoordinatorUnavailable error = &reasonSentinel{ReasonCoordinatorUnavailable}
	ErrLimited                error = &reasonSentinel{"limited"}
)

// ErrClosed is returned by a call made through a closed Client.
var ErrClosed = fmt.Errorf("sluice: the client is closed")

type reasonSentinel struct{ reason Reason }

func (s *reasonSentinel) Error() string {
	if s.reason == "" {
		return "sluice: gave up"
	}
	return "sluice: gave up (" + string(s.reason) + ")"
}

// BreakerInfo is what the client knows of a breaker that refused a call.
type BreakerInfo struct {
	// State is the breaker state that refused the call: open, half_open or forced_open.
	State string
	// OperatorReason is the operator's reason for a forced state; empty otherwise or when unknown.
	OperatorReason string
	// OpenUntil is when the breaker may let calls through again; zero when unknown or held until reset.
	OpenUntil time.Time
	// RetryAfter is how long from the refusal until the same call could go through; 0 when unknown.
	RetryAfter time.Duration
}

// GiveUpError is the error of a call that failed and was not retried (again). Err is the last
// attempt's own error (nil when no attempt was made); errors.As and errors.Is see through it.
type GiveUpError struct {
	Dependency string
	Reason     Reason
	// Attempts is how many attempts went out.
	Attempts int
	// Err is the last attempt's error, nil when none went out.
	Err error
	// Breaker is set for a breaker_open give-up: the state, and the operator's reason when an
	// operator forced it open.
	Breaker *BreakerInfo
	// RetryAfter is, for rate_limited and concurrency_limited, when the limit expects to admit the call.
	RetryAfter time.Duration
}

func (e *GiveUpError) Error() string {
	switch {
	case e.Reason == ReasonBreakerOpen && e.Breaker != nil:
		msg := fmt.Sprintf("%s: the circuit breaker is %s", e.Dependency, e.Breaker.State)
		if e.Breaker.OperatorReason != "" {
			msg += " (" + e.Breaker.OperatorReason + ")"
		}
		return msg
	case e.Err != nil:
		return fmt.Sprintf("%s: gave up after %d attempt(s) (%s): %v", e.Dependency, e.Attempts, e.Reason, e.Err)
	default:
		return fmt.Sprintf("%s: gave up after %d attempt(s) (%s)", e.Dependency, e.Attempts, e.Reason)
	}
}

// Unwrap returns the last attempt's error.
func (e *GiveUpError) Unwrap() error { return e.Err }

// Is reports whether target is ErrGiveUp, the sentinel of e's reason, or (for deadline_exceeded)
// context.DeadlineExceeded.
func (e *GiveUpError) Is(target error) bool {
	if target == context.DeadlineExceeded {
		return e.Reason == ReasonDeadlineExceeded
	}
	s, ok := target.(*reasonSentinel)
	if !ok {
		return false
	}
	switch s.reason {
	case "":
		return true
	case "limited":
		return e.Reason == ReasonRateLimited || e.Reason == ReasonConcurrencyLimited
	}
	return s.reason == e.Reason
}

// OperatorReason is the operator's reason when an operator forced the breaker that refused the
// call, else "".
func (e *GiveUpError) OperatorReason() string {
	if e.Breaker == nil {
		return ""
	}
	return e.Breaker.OperatorReason
}

// ConfigError says the coordinator refuses the client's token: 401 (missing or unknown token) or
// 403 (a token whose role or namespaces do not cover the namespace). It is a configuration error,
// not an outage: the client does not switch to its fallback for it.
type ConfigError struct {
	Status  int
	Code    string
	Message string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("sluice: the coordinator answered %d %s: %s", e.Status, e.Code, e.Message)
}

// CoordinatorError says the coordinator could not answer: unreachable, too slow, or a non-2xx
// answer such as 503 store_unavailable. Status is 0 when no answer came.
type CoordinatorError struct {
	Status     int
	Code       string
	RetryAfter time.Duration
	Message    string
	Err        error
}

func (e *CoordinatorError) Error() string {
	if e.Err != nil {
		return "sluice: " + e.Message + ": " + e.Err.Error()
	}
	return "sluice: " + e.Message
}

// Unwrap returns the transport error, if any.
func (e *CoordinatorError) Unwrap() error { return e.Err }

// Overloaded is true for a 503 overloaded: the instance shed the request before doing any work.
func (e *CoordinatorError) Overloaded() bool { return e.Status == 503 && e.Code == "overloaded" }

// StatusError is an HTTP answer whose status is a failure worth retrying (408, 429, 5xx). Return
// one from a Do function to have the status classified; the Transport returns one inside a
// *GiveUpError when it gives up on such an answer, with the answer's body (up to 64 KiB).
type StatusError struct {
	StatusCode int
	// RetryAfter is the answer's Retry-After: a retry never waits less.
	RetryAfter time.Duration
	// NoRetry is the answer's sluice-no-retry header: the service gave up on its own dependency.
	NoRetry string
	Header  http.Header
	Body    []byte
}

func (e *StatusError) Error() string { return fmt.Sprintf("the dependency answered %d", e.StatusCode) }
