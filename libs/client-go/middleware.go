package sluice

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The headers between services.
const (
	// DeadlineHeader carries the caller's remaining deadline, in ms.
	DeadlineHeader = "Sluice-Deadline-Ms"
	// AttemptHeader carries the attempt number of the call (1 for the first).
	AttemptHeader = "Sluice-Attempt"
	// NoRetryHeader on a response says the service gave up on a dependency while serving it (its
	// value is the reason), so its caller does not retry it either.
	NoRetryHeader = "Sluice-No-Retry"
	// IdempotencyKeyHeader is the request's idempotency key.
	IdempotencyKeyHeader = "Idempotency-Key"
)

type servingKey struct{}

// serving is what Middleware learned of the request being served.
type serving struct {
	attempt int
	key     string
	mu      sync.Mutex
	header  http.Header
}

func (s *serving) pushback(reason Reason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.header.Set(NoRetryHeader, string(reason))
}

// Middleware reads the Sluice headers of incoming requests into their context: the caller's
// deadline (sluice-deadline-ms) becomes the context's deadline, so calls made while serving the
// request give up when the caller would; the attempt number (sluice-attempt) makes those calls
// leave retries to a caller that is itself retrying; Idempotency-Key is kept for
// IncomingIdempotencyKey. When a call gives up while serving the request, the response says
// so with sluice-no-retry (unless the handler already wrote its header).
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if ms, ok := intHeader(r.Header.Get(DeadlineHeader), 0, maxDurationMs); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
			defer cancel()
		}
		attempt, ok := intHeader(r.Header.Get(AttemptHeader), 1, 100)
		if !ok {
			attempt = 1
		}
		s := &serving{attempt: int(attempt), key: r.Header.Get(IdempotencyKeyHeader), header: w.Header()}
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, servingKey{}, s)))
	})
}

// IncomingIdempotencyKey is the Idempotency-Key of the request being served (through
// Middleware), or "".
func IncomingIdempotencyKey(ctx context.Context) string {
	if s, ok := ctx.Value(servingKey{}).(*serving); ok {
		return s.key
	}
	return ""
}

// ServingAttempt is the sluice-attempt of the request being served (through Middleware): 1 for a
// first attempt, and outside a request.
func ServingAttempt(ctx context.Context) int {
	if s, ok := ctx.Value(servingKey{}).(*serving); ok {
		return s.attempt
	}
	return 1
}

func intHeader(value string, min, max int64) (int64, bool) {
	v, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
	if err != nil || v < min || v > max {
		return 0, false
	}
	return v, true
}

// OutgoingHeaders writes the headers of an attempt made within ctx (inside a Do function) into h:
// sluice-deadline-ms (what is left of the context's deadline), sluice-attempt, and Idempotency-Key
// when the call has one. The Transport does this itself.
func OutgoingHeaders(ctx context.Context, h http.Header) {
	number, key := 1, ""
	if info, ok := ctx.Value(attemptKey{}).(*attemptInfo); ok {
		number, key = info.number, info.key
	}
	if dl, ok := ctx.Deadline(); ok {
		h.Set(DeadlineHeader, strconv.FormatInt(remainingMs(dl), 10))
	}
	h.Set(AttemptHeader, strconv.Itoa(number))
	if key != "" {
		h.Set(IdempotencyKeyHeader, key)
	}
}

func remainingMs(deadline time.Time) int64 {
	ms := time.Until(deadline).Milliseconds()
	if ms < 0 {
		return 0
	}
	return ms
}
