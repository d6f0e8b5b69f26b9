package sluice

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"time"
)

type callOptionsKey struct{}

// WithCallOptions returns a context whose requests through a Transport are made with opts (e.g.
// Idempotent for a POST that is safe to repeat, or MaxAttempts).
func WithCallOptions(ctx context.Context, opts ...CallOption) context.Context {
	return context.WithValue(ctx, callOptionsKey{}, opts)
}

// Transport returns an http.RoundTripper that sends each request through the dependency's policy
// over base (http.DefaultTransport when nil): GET, HEAD, OPTIONS, TRACE, PUT and DELETE are
// idempotent, as is any request made with WithCallOptions(ctx, Idempotent()); a request with an
// Idempotency-Key header (or the IdempotencyKey option, which sets the header) carries a key.
// Every attempt carries sluice-deadline-ms (what is left of the call's deadline), sluice-attempt
// and the key; a body is resent from GetBody, or buffered once when there is none.
//
// An answer with a status the caller owns (2xx, 3xx, 4xx other than 408 and 429) is returned as
// it is. When a failed answer (408, 429, 5xx) is not retried (again), RoundTrip returns a
// *GiveUpError whose Err is a *StatusError with that answer's status, headers and body; a
// connection failure likewise ends in a *GiveUpError around it.
func (c *Client) Transport(dependency string, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &roundTripper{dep: c.Dependency(dependency), base: base}
}

type roundTripper struct {
	dep  *Dependency
	base http.RoundTripper
}

func idempotentMethod(method string) bool {
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	d := t.dep
	o := callOptions{idempotent: d.cfg.Idempotent || idempotentMethod(req.Method), maxAttempts: d.cfg.MaxAttempts, deadline: d.cfg.Deadline}
	ctx := req.Context()
	if opts, ok := ctx.Value(callOptionsKey{}).([]CallOption); ok {
		o.apply(opts)
	}
	if o.key == "" {
		o.key = req.Header.Get(IdempotencyKeyHeader)
	}
	getBody := req.GetBody
	if req.Body != nil && req.Body != http.NoBody && getBody == nil {
		data, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		getBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	}
	deadline := time.Now().Add(o.deadline)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	var answer *http.Response
	attempts := 0
	err := d.do(ctx, func(ctx context.Context) error {
		attempts++
		r := req.Clone(ctx)
		if getBody != nil && (attempts > 1 || req.GetBody == nil) {
			body, err := getBody()
			if err != nil {
				return err
			}
			r.Body = body
		}
		dl := deadline
		if cdl, ok := ctx.Deadline(); ok && cdl.Before(dl) {
			dl = cdl
		}
		r.Header.Set(DeadlineHeader, strconv.FormatInt(remainingMs(dl), 10))
		r.Header.Set(AttemptHeader, strconv.Itoa(Attempt(ctx)))
		if o.key != "" {
			r.Header.Set(IdempotencyKeyHeader, o.key)
		}
		res, err := t.base.RoundTrip(r)
		if err != nil {
			return err
		}
		if !retriableStatus(res.StatusCode) {
			answer = res
			return nil
		}
		body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		res.Body.Close()
		retryAfter, _ := ParseRetryAfter(res.Header.Get("Retry-After"), time.Now())
		return &StatusError{StatusCode: res.StatusCode, RetryAfter: retryAfter, NoRetry: res.Header.Get(NoRetryHeader), Header: res.Header, Body: body}
	}, &o)
	if err != nil {
		return nil, err
	}
	return answer, nil
}
