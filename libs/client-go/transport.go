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
	o := d.callOptions()
	o.idempotent = o.idempotent || idempotentMethod(req.Method)
	ctx := req.Context()
	if opts, ok := ctx.Value(callOptionsKey{}).([]CallOption); ok {
		o.apply(opts)
	}
	if o.key == "" {
		// IdempotencyKeyHeader is canonical: Header.Get would find the same value.
		if v := req.Header[IdempotencyKeyHeader]; len(v) > 0 {
			o.key = v[0]
		}
	}
	if err := d.callable(ctx); err != nil {
		return nil, err
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
	if d.direct(&o) {
		return t.direct(ctx, req, getBody, &o)
	}
	rc := t.newRoundTrip(ctx, req, getBody, o, time.Now())
	if err := d.admitted(ctx, rc, &rc.opts); err != nil {
		return nil, err
	}
	return rc.answer, nil
}

// direct sends the first attempt at once (see Dependency.direct), and takes the long way only
// when it failed or was slow. Its time is read from the monotonic clock: the coarse clock's tick
// would wake the process every millisecond while requests go out.
func (t *roundTripper) direct(ctx context.Context, req *http.Request, getBody func() (io.ReadCloser, error), o *callOptions) (*http.Response, error) {
	d := t.dep
	base := d.client.clock.base
	start := time.Since(base)
	left := o.deadline
	if dl, ok := ctx.Deadline(); ok {
		if l := dl.Sub(base) - start; l < left {
			left = l
		}
	}
	a := new(attemptCopy)
	a.req = *req
	a.req.Header = t.header(req.Header, &a.values, left, Attempt(ctx), o.key)
	if getBody != nil && req.GetBody == nil {
		body, err := getBody()
		if err != nil {
			return nil, err
		}
		a.req.Body = body
	}
	res, err := t.base.RoundTrip(&a.req)
	elapsed := time.Since(base) - start
	var answer *http.Response
	if err == nil {
		if !retriableStatus(res.StatusCode) {
			if d.fleet.directSucceeded(elapsed) {
				return res, nil
			}
			answer = res
		} else {
			err = statusError(res)
		}
	}
	rc := t.newRoundTrip(ctx, req, getBody, *o, time.Now().Add(-elapsed))
	rc.attempts = 1
	rc.answer = answer
	if err := d.afterDirect(ctx, rc, o, err, elapsed); err != nil {
		return nil, err
	}
	return rc.answer, nil
}

// attemptNumbers are the sluice-attempt values of the first attempts, made once.
var attemptNumbers = [...]string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}

// header is h with the protocol's headers of one attempt, in a map of the attempt's own (h's value
// slices are shared: neither side changes them); values backs the protocol's values.
func (t *roundTripper) header(h http.Header, values *[3]string, left time.Duration, number int, key string) http.Header {
	header := make(http.Header, len(h)+3)
	for k, v := range h {
		header[k] = v
	}
	ms := left.Milliseconds()
	if ms < 0 {
		ms = 0
	}
	values[0] = t.deadlineText(ms)
	if number >= 0 && number < len(attemptNumbers) {
		values[1] = attemptNumbers[number]
	} else {
		values[1] = strconv.Itoa(number)
	}
	header[DeadlineHeader] = values[0:1:1]
	header[AttemptHeader] = values[1:2:2]
	if key != "" {
		values[2] = key
		header[IdempotencyKeyHeader] = values[2:3:3]
	}
	return header
}

// attemptCopy is an attempt's copy of the request with the protocol's values, one allocation.
type attemptCopy struct {
	req    http.Request
	values [3]string
}

// roundTrip is one request through the Transport past its direct first attempt, with its attempts.
type roundTrip struct {
	t        *roundTripper
	req      *http.Request
	opts     callOptions
	getBody  func() (io.ReadCloser, error)
	deadline time.Time
	attempts int
	answer   *http.Response
}

// newRoundTrip is the request's call, started at start.
func (t *roundTripper) newRoundTrip(ctx context.Context, req *http.Request, getBody func() (io.ReadCloser, error), o callOptions, start time.Time) *roundTrip {
	rc := &roundTrip{t: t, req: req, opts: o, getBody: getBody, deadline: start.Add(o.deadline)}
	if dl, ok := ctx.Deadline(); ok && dl.Before(rc.deadline) {
		rc.deadline = dl
	}
	return rc
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
	a := new(attemptCopy)
	if sameContext(ctx, rc.req.Context()) {
		a.req = *rc.req
	} else {
		a.req = *rc.req.WithContext(ctx)
	}
	r := &a.req
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
	r.Header = rc.t.header(rc.req.Header, &a.values, time.Until(dl), Attempt(ctx), rc.opts.key)
	res, err := rc.t.base.RoundTrip(r)
	if err != nil {
		return err
	}
	if retriableStatus(res.StatusCode) {
		return statusError(res)
	}
	rc.answer = res
	return nil
}

// statusError is a failed answer as the error a retry is decided on; its body is read (up to 64
// KiB) and closed.
func statusError(res *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	retryAfter, _ := ParseRetryAfter(res.Header.Get("Retry-After"), time.Now())
	return &StatusError{StatusCode: res.StatusCode, RetryAfter: retryAfter, NoRetry: res.Header.Get(NoRetryHeader), Header: res.Header, Body: body}
}
