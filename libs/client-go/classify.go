package sluice

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// FailureKind is what failed when no answer came.
type FailureKind string

// The kinds of failure without an HTTP status.
const (
	KindTimeout    FailureKind = "timeout"
	KindConnection FailureKind = "connection"
	KindOther      FailureKind = "other"
)

// Failure is what an attempt's error says about the dependency, in HTTP terms: a Status, or a Kind
// when no answer came, plus the dependency's Retry-After.
type Failure struct {
	// Status is the HTTP status (0 when there was none).
	Status int
	// Kind is set when Status is 0.
	Kind FailureKind
	// RetryAfter is the dependency's Retry-After: a retry never waits less.
	RetryAfter time.Duration
	// RetriedDownstream is true when the dependency says it already retried its own calls
	// (sluice-no-retry).
	RetriedDownstream bool
}

// A Classifier describes an error as a Failure, or returns false to leave it to the next one.
type Classifier func(err error) (Failure, bool)

// HTTPStatuser is implemented by errors that carry an HTTP status; the default classifier reads it.
type HTTPStatuser interface {
	HTTPStatus() int
}

// DefaultClassifier classifies a *StatusError, any error with an HTTPStatus method, timeouts
// (context.DeadlineExceeded, net.Error timeouts) and connection errors (refused, reset, broken
// pipe, unreachable, an unexpected EOF). Anything else is KindOther.
func DefaultClassifier(err error) (Failure, bool) {
	var status *StatusError
	if errors.As(err, &status) {
		return Failure{Status: status.StatusCode, RetryAfter: status.RetryAfter, RetriedDownstream: status.NoRetry != ""}, true
	}
	var statuser HTTPStatuser
	if errors.As(err, &statuser) {
		if s := statuser.HTTPStatus(); s >= 100 && s <= 599 {
			return Failure{Status: s}, true
		}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return Failure{Kind: KindTimeout}, true
	}
	for _, errno := range connectionErrnos {
		if errors.Is(err, errno) {
			return Failure{Kind: KindConnection}, true
		}
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return Failure{Kind: KindTimeout}, true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return Failure{Kind: KindConnection}, true
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return Failure{Kind: KindConnection}, true
	}
	return Failure{}, false
}

var connectionErrnos = []error{
	syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
	syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ENETDOWN,
}

// Classify runs the classifiers in order, then DefaultClassifier; an error none knows is KindOther.
func Classify(err error, classifiers []Classifier) Failure {
	for _, c := range classifiers {
		if f, ok := c(err); ok {
			return f
		}
	}
	if f, ok := DefaultClassifier(err); ok {
		return f
	}
	return Failure{Kind: KindOther}
}

// IsDependencyFailure is true when the failure is the dependency's (it counts against its breaker
// and may be retried): no status at all (timeouts, connection errors, unknown errors), 408, 429
// and 5xx. Other statuses are the caller's.
func IsDependencyFailure(f Failure) bool {
	return f.Status == 0 || retriableStatus(f.Status)
}

func retriableStatus(status int) bool {
	return status == 408 || status == 429 || status >= 500
}

// retryDenial is the rule that needs no state: never a status that is the caller's
// (not_retriable); an idempotent call may be retried; a call that carries an idempotency key may
// be retried after a failure that says the request was not processed (no answer, 408, 429, 503).
func retryDenial(f Failure, idempotent, hasKey bool) Reason {
	if !IsDependencyFailure(f) {
		return "not_retriable"
	}
	if idempotent {
		return ""
	}
	if !hasKey {
		return ReasonNotIdempotent
	}
	if f.Status == 0 || f.Status == 408 || f.Status == 429 || f.Status == 503 {
		return ""
	}
	return ReasonNotIdempotent
}

// maxDurationMs is the coordinator's bound on a duration field.
const maxDurationMs = 86_400_000

// ParseRetryAfter reads a Retry-After value (delay-seconds or an HTTP-date, relative to now); 0
// and false when absent or malformed.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > maxDurationMs/1000 {
			secs = maxDurationMs / 1000
		}
		return time.Duration(secs) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := at.Sub(now)
	if d < 0 {
		d = 0
	}
	if d > maxDurationMs*time.Millisecond {
		d = maxDurationMs * time.Millisecond
	}
	return d, true
}
