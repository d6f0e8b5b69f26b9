package sluice

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
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
	// lastLeft is the last sluice-deadline-ms sent, with its text: most requests send the same.
	lastLeft atomic.Pointer[msText]
}

// msText is a number of milliseconds and its decimal text.
type msText struct {
	ms   int64
	text string
}

// deadlineText is ms in decimal, formatted again only when it differs from the last one.
func (t *roundTripper) deadlineText(ms int64) string {
	if last := t.lastLeft.Load(); last != nil && last.ms == ms {
		return last.text
	}
	last := &msText{ms: ms, text: strconv.FormatInt(ms, 10)}
	t.lastLeft.Store(last)
	return last.text
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
	rc := &roundTrip{t: t, req: req}
	rc.opts = d.callOptions()
	rc.opts.idempotent = rc.opts.idempotent || idempotentMethod(req.Method)
	ctx := req.Context()
	if opts, ok := ctx.Value(callOptionsKey{}).([]CallOption); ok {
		rc.opts.apply(opts)
	}
	if rc.opts.key == "" {
		// IdempotencyKeyHeader is canonical: Header.Get would find the same value.
		if v := req.Header[IdempotencyKeyHeader]; len(v) > 0 {
			rc.opts.key = v[0]
		}
	}
	rc.getBody = req.GetBody
	if req.Body != nil && req.Body != http.NoBody && rc.getBody == nil {
		data, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		rc.getBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	}
	rc.deadline = d.client.now().Add(rc.opts.deadline)
	if dl, ok := ctx.Deadline(); ok && dl.Before(rc.deadline) {
		rc.deadline = dl
	}
	if err := d.do(ctx, rc, &rc.opts); err != nil {
		return nil, err
	}
	return rc.answer, nil
}

// attemptNumbers are the sluice-attempt values of the first attempts, made once.
var attemptNumbers = [...]string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}

// roundTrip is one request through the Transport, with its attempts.
type roundTrip struct {
	t        *roundTripper
	req      *http.Request
	opts     callOptions
	getBody  func() (io.ReadCloser, error)
	deadline time.Time
	attempts int
	answer   *http.Response
	// values backs the three headers each attempt adds.
	values [3]string
	// first is the first attempt's copy of the request, made with the call's own allocation.
	first http.Request
}

// sameContext says whether a and b are one context (a context of a type that cannot be compared
// is taken for another).
func sameContext(a, b context.Context) (same bool) {
	defer func() { _ = recover() }()
	return a == b
}

// attempt sends one attempt: a copy of the request with its own headers (and body).
func (rc *roundTrip) attempt(ctx context.Context) error {
	rc.attempts++
	var r *http.Request
	if rc.attempts == 1 && sameContext(ctx, rc.req.Context()) {
		r = &rc.first
		*r = *rc.req
	} else {
		r = rc.req.WithContext(ctx)
	}
	header := make(http.Header, len(rc.req.Header)+3)
	for k, v := range rc.req.Header {
		header[k] = v
	}
	r.Header = header
	if rc.getBody != nil && (rc.attempts > 1 || rc.req.GetBody == nil) {
		body, err := rc.getBody()
		if err != nil {
			return err
		}
		r.Body = body
	}
	dl := rc.deadline
	if cdl, ok := ctx.Deadline(); ok && cdl.Before(dl) {
		dl = cdl
	}
	left := dl.Sub(rc.t.dep.client.now()).Milliseconds()
	if left < 0 {
		left = 0
	}
	number := Attempt(ctx)
	if number < len(attemptNumbers) {
		rc.values[1] = attemptNumbers[number]
	} else {
		rc.values[1] = strconv.Itoa(number)
	}
	rc.values[0] = rc.t.deadlineText(left)
	header["Sluice-Deadline-Ms"] = rc.values[0:1:1]
	header["Sluice-Attempt"] = rc.values[1:2:2]
	if rc.opts.key != "" {
		rc.values[2] = rc.opts.key
		header["Idempotency-Key"] = rc.values[2:3:3]
	}
	res, err := rc.t.base.RoundTrip(r)
	if err != nil {
		return err
	}
	if !retriableStatus(res.StatusCode) {
		rc.answer = res
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	retryAfter, _ := ParseRetryAfter(res.Header.Get("Retry-After"), time.Now())
	return &StatusError{StatusCode: res.StatusCode, RetryAfter: retryAfter, NoRetry: res.Header.Get(NoRetryHeader), Header: res.Header, Body: body}
}
