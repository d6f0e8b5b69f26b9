package sluice

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// recording is a base RoundTripper that answers 200 at once and keeps the requests it was given.
type recording struct{ got []*http.Request }

func (r *recording) RoundTrip(req *http.Request) (*http.Response, error) {
	r.got = append(r.got, req)
	return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}

// valuesContext is a context of a type that cannot be compared (it holds a map).
type valuesContext struct {
	context.Context
	values map[string]string
}

func TestTheTransportLeavesTheCallersRequestAsItIs(t *testing.T) {
	c, err := New(Config{BaseURLs: []string{"http://127.0.0.1:9"}, Namespace: "shop", SkipStartCheck: true, Logger: NopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-c.Dependency("pay").fleet.firstView
	base := &recording{}
	rt := c.Transport("pay", base)
	type key struct{}
	for _, ctx := range []context.Context{
		context.WithValue(context.Background(), key{}, "order-42"),
		valuesContext{Context: context.WithValue(context.Background(), key{}, "order-42"), values: map[string]string{}},
	} {
		base.got = nil
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://127.0.0.1:1/orders/42", nil)
		req.Header.Set("X-Order", "42")
		res, err := rt.RoundTrip(req)
		if err != nil || res.StatusCode != 200 || len(base.got) != 1 {
			t.Fatalf("%T: %v, %d attempts", ctx, err, len(base.got))
		}
		sent := base.got[0]
		if sent == req || sent.Header.Get("X-Order") != "42" || sent.Header.Get(AttemptHeader) != "1" || sent.Header.Get(DeadlineHeader) == "" {
			t.Fatalf("%T: the attempt is a copy with the caller's headers and the protocol's: %v", ctx, sent.Header)
		}
		if sent.Context().Value(key{}) != "order-42" || sent.URL.String() != req.URL.String() || sent.Method != "GET" {
			t.Fatalf("%T: the attempt keeps the request's context, URL and method", ctx)
		}
		if len(req.Header) != 1 || req.Header.Get("X-Order") != "42" {
			t.Fatalf("%T: the caller's request changed: %v", ctx, req.Header)
		}
	}
}

func TestTheTransportRetriesAFirstAttemptThatWentOutAtOnce(t *testing.T) {
	f := needFleet(t)
	c, _ := newTestClient(t, f, nil)
	<-c.Dependency("pay").fleet.firstView
	dep := newScripted(t, 503, 200)
	hc := &http.Client{Transport: c.Transport("pay", nil)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", dep.url+"/orders/42", nil)
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	got := dep.requests()
	if res.StatusCode != 200 || len(got) != 2 {
		t.Fatalf("status %d after %d attempts", res.StatusCode, len(got))
	}
	var deadlines []int64
	for i, h := range got {
		ms, ok := intHeader(h.Get(DeadlineHeader), 1, 5000)
		if h.Get(AttemptHeader) != itoa(i+1) || !ok || h.Get(IdempotencyKeyHeader) != "" {
			t.Fatalf("attempt %d headers %v", i+1, h)
		}
		deadlines = append(deadlines, ms)
	}
	if deadlines[1] > deadlines[0] {
		t.Fatalf("the deadline shrinks: %v", deadlines)
	}
}
