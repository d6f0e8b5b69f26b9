package sluice

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// maxReAsks bounds how many times one call to the coordinator is asked again after its first exchange.
const maxReAsks = 2

// coordinator is the client's HTTP link to the coordinators: one base URL at a time, the next one
// after a failure without an answer. A 401 or 403 is a *ConfigError, any other failure a
// *CoordinatorError. A call that got no answer is asked again within its time: after a 503
// overloaded or a connection never made, any call, on another instance; after any other 503, a
// 502 or 504, a lost connection or a timeout, only a call that carries a caller-chosen id
// (repeatable), with the same body, so the coordinator answers the first outcome.
type coordinator struct {
	bases     []string
	namespace string
	token     string
	http      *http.Client
	stream    *http.Client
	current   atomic.Int32
	// asked counts decision requests (retry, retries, admit) sent, re-asks included.
	asked atomic.Int64
}

func newCoordinator(bases []string, namespace, token string, connectTimeout time.Duration) *coordinator {
	dialer := &net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         dialer.DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
	streamTransport := &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 1}
	trimmed := make([]string, len(bases))
	for i, b := range bases {
		trimmed[i] = strings.TrimRight(b, "/")
	}
	return &coordinator{
		bases:     trimmed,
		namespace: namespace,
		token:     token,
		http:      &http.Client{Transport: transport},
		stream:    &http.Client{Transport: streamTransport},
	}
}

func (c *coordinator) close() {
	c.http.CloseIdleConnections()
	c.stream.CloseIdleConnections()
}

// newRequestID is a fresh caller-chosen id: 128 random bits in hex.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// exchange is one call to the coordinator.
type exchange struct {
	method, path string
	body         any
	// timeout bounds the whole call, every exchange of it; reAskWithin is how long after the first
	// send a re-ask may still go out (0: timeout).
	timeout, reAskWithin time.Duration
	repeatable           bool
	header               http.Header
	// out receives a 2xx answer's JSON body (nil: the body is ignored).
	out any
	// onResponse sees every 2xx or 304 answer's status and headers.
	onResponse func(status int, header http.Header)
	// onWritten, when set, is called each time a request of the call has been written to a
	// coordinator's connection (a decision's time runs from the first); onAnswer when a 2xx answer,
	// which is never asked again, begins to be read.
	onWritten, onAnswer func()
}

// call runs an exchange with its re-asks; ctx ends it early (the client closing).
func (c *coordinator) call(ctx context.Context, x exchange) error {
	var payload []byte
	if x.body != nil {
		var err error
		if payload, err = json.Marshal(x.body); err != nil {
			return err
		}
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, x.timeout)
	defer cancel()
	reAskWithin := x.reAskWithin
	if reAskWithin == 0 {
		reAskWithin = x.timeout
	}
	untouched := map[int]bool{}
	var telling, last *CoordinatorError
	index := int(c.current.Load())
	for reAsks := 0; ; {
		err := c.once(ctx, index, x, payload)
		if err == nil {
			return nil
		}
		var failure *CoordinatorError
		if !errors.As(err, &failure) {
			return err // a ConfigError, or the client closing
		}
		unanswered := failure.Status == 0 || failure.Status == 502 || failure.Status == 503 || failure.Status == 504
		nothingDone := failure.Overloaded() || notConnected(failure)
		if unanswered {
			c.moveOn(index)
		}
		if nothingDone {
			untouched[index] = true
		}
		if !failure.Overloaded() {
			telling = failure
		}
		last = failure
		ending := telling
		if ending == nil {
			ending = last
		}
		elapsed := time.Since(start)
		if !unanswered || elapsed >= reAskWithin || elapsed >= x.timeout-time.Millisecond || reAsks >= maxReAsks || ctx.Err() != nil {
			return ending
		}
		next := (index + 1) % len(c.bases)
		if nothingDone && untouched[next] || !nothingDone && !x.repeatable {
			return ending
		}
		reAsks++
		index = next
	}
}

func (c *coordinator) moveOn(index int) {
	c.current.CompareAndSwap(int32(index), int32((index+1)%len(c.bases)))
}

// once is one exchange with the index-th coordinator.
func (c *coordinator) once(ctx context.Context, index int, x exchange, payload []byte) error {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	u := c.bases[index] + "/v1/" + c.namespace + "/" + x.path
	if wrote := x.onWritten; wrote != nil {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				wrote()
			}
		}})
	}
	req, err := http.NewRequestWithContext(ctx, x.method, u, body)
	if err != nil {
		return err
	}
	for name, values := range x.header {
		req.Header[name] = values
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if isDecision(x.path) {
		c.asked.Add(1)
	}
	res, err := c.http.Do(req)
	if err == nil && res.StatusCode >= 200 && res.StatusCode < 300 && x.onAnswer != nil {
		x.onAnswer()
	}
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return ctx.Err()
		}
		msg := "the coordinator is unreachable"
		if ctx.Err() != nil {
			msg = fmt.Sprintf("the coordinator did not answer within %d ms", x.timeout.Milliseconds())
		}
		return &CoordinatorError{Message: msg, Err: err}
	}
	defer res.Body.Close()
	return readAnswer(res, x)
}

func isDecision(path string) bool {
	return path == "retries" || strings.HasSuffix(path, "/retry") || strings.HasSuffix(path, "/admit")
}

// readAnswer reads an answer: a 2xx one's JSON into x.out, else a *ConfigError (401, 403) or a
// *CoordinatorError.
func readAnswer(res *http.Response, x exchange) error {
	text, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return &CoordinatorError{Message: "the coordinator's answer broke off", Err: err}
	}
	status := res.StatusCode
	if status == 401 || status == 403 {
		return tokenRefusal(status, text)
	}
	if status == 304 && x.onResponse != nil {
		x.onResponse(status, res.Header)
		return nil
	}
	if status < 200 || status >= 300 {
		var body struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Details []struct {
				Field string `json:"field"`
			} `json:"details"`
		}
		_ = json.Unmarshal(text, &body)
		retryAfter, _ := ParseRetryAfter(res.Header.Get("Retry-After"), time.Now())
		snippet := string(text)
		if len(snippet) > 200 {
			snippet = snippet[:200]
		}
		return &CoordinatorError{
			Status: status, Code: body.Code, RetryAfter: retryAfter,
			Message: fmt.Sprintf("the coordinator answered %d: %s", status, snippet),
		}
	}
	if x.onResponse != nil {
		x.onResponse(status, res.Header)
	}
	if x.out != nil && len(text) > 0 {
		if err := json.Unmarshal(text, x.out); err != nil {
			return &CoordinatorError{Status: status, Message: "the coordinator's answer is not JSON", Err: err}
		}
	}
	return nil
}

func tokenRefusal(status int, text []byte) *ConfigError {
	var body struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(text, &body)
	if body.Code == "" {
		body.Code = "unauthorized"
		if status == 403 {
			body.Code = "forbidden"
		}
	}
	if body.Message == "" {
		body.Message = "no message"
	}
	return &ConfigError{Status: status, Code: body.Code, Message: body.Message}
}

// notConnected is true when the request never reached the coordinator.
func notConnected(failure *CoordinatorError) bool {
	if failure.Err == nil {
		return false
	}
	if errors.Is(failure.Err, syscall.ECONNREFUSED) || errors.Is(failure.Err, syscall.EHOSTUNREACH) {
		return true
	}
	var opErr *net.OpError
	if errors.As(failure.Err, &opErr) && opErr.Op == "dial" {
		return true
	}
	var dnsErr *net.DNSError
	return errors.As(failure.Err, &dnsErr)
}

// openEvents opens GET /v1/{ns}/events?deps=… on the current coordinator; the caller reads and
// closes the body. cancel ends ctx: it is called when no answer head came within timeout.
func (c *coordinator) openEvents(ctx context.Context, cancel context.CancelFunc, deps []string, timeout time.Duration) (*http.Response, error) {
	index := int(c.current.Load())
	escaped := make([]string, len(deps))
	for i, d := range deps {
		escaped[i] = url.QueryEscape(d)
	}
	u := c.bases[index] + "/v1/" + c.namespace + "/events?deps=" + strings.Join(escaped, ",")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	headTimer := time.AfterFunc(timeout, cancel)
	res, err := c.stream.Do(req)
	headTimer.Stop()
	if err != nil {
		c.moveOn(index)
		return nil, &CoordinatorError{Message: "the event stream could not be opened", Err: err}
	}
	if res.StatusCode != 200 {
		defer res.Body.Close()
		if res.StatusCode == 401 || res.StatusCode == 403 {
			text, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
			return nil, tokenRefusal(res.StatusCode, text)
		}
		if res.StatusCode == 503 {
			c.moveOn(index)
		}
		return nil, &CoordinatorError{Status: res.StatusCode, Message: fmt.Sprintf("the event stream answered %d", res.StatusCode)}
	}
	return res, nil
}
