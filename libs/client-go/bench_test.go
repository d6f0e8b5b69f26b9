package sluice

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"syscall"
	"testing"
	"time"
)

// reportCPU adds cpu-ns/op: the process's CPU time per operation (user and system, every thread,
// the garbage collector's included). Unlike ns/op it does not count the time the machine gave to
// other processes, so it stays comparable on a busy shared host.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var u syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
		return time.Duration(u.Utime.Nano() + u.Stime.Nano())
	}
	start := cpu()
	return func() { b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op") }
}

//go:noinline
func succeed(context.Context) error { return nil }

// benchClient is a client of the test fleet, or, without one, of an address nobody answers (the
// call path through a closed breaker is the same).
func benchClient(b *testing.B) *Client {
	urls := []string{"http://127.0.0.1:9"}
	if testFleet != nil {
		urls = testFleet.urls
	}
	c, err := New(Config{BaseURLs: urls, Namespace: newNamespace(), Token: clientSecret, SkipStartCheck: true, Logger: NopLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func BenchmarkBareCall(b *testing.B) {
	ctx := context.Background()
	fn := succeed
	b.ReportAllocs()
	defer reportCPU(b)()
	for i := 0; i < b.N; i++ {
		if err := fn(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDoClosedBreaker(b *testing.B) {
	c := benchClient(b)
	dep := c.Dependency("bench")
	ctx := context.Background()
	<-dep.fleet.firstView
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	for i := 0; i < b.N; i++ {
		if err := dep.Do(ctx, succeed, Idempotent()); err != nil {
			b.Fatal(err)
		}
	}
}

func loopback(b *testing.B) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	b.Cleanup(s.Close)
	return s
}

func getAll(b *testing.B, hc *http.Client, url string) {
	res, err := hc.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
}

func BenchmarkBareHTTP(b *testing.B) {
	s := loopback(b)
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	for i := 0; i < b.N; i++ {
		getAll(b, hc, s.URL)
	}
}

func BenchmarkTransport(b *testing.B) {
	s := loopback(b)
	c := benchClient(b)
	<-c.Dependency("bench").fleet.firstView
	hc := &http.Client{Transport: c.Transport("bench", http.DefaultTransport.(*http.Transport).Clone())}
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	for i := 0; i < b.N; i++ {
		getAll(b, hc, s.URL)
	}
}

// BenchmarkTransportOverhead is what the Transport adds to a loopback request: the same GET to the
// same server over one http.Transport (one keep-alive connection), sent bare, through the
// Transport, and through headersOnly (the protocol's two headers and nothing else), one request of
// each in turn, the order rotating, each request timed. One op is one request of each. A shared
// machine preempts some requests: the lower quantiles of each way's times are what the code costs,
// so the differences reported are those of the 25th percentiles (added-ns/req, headers-ns/req) and
// of the medians (added-median-ns/req). Run it with -cpu 1,2 -count 5 and read the spread.
func BenchmarkTransportOverhead(b *testing.B) {
	s := loopback(b)
	c := benchClient(b)
	<-c.Dependency("bench").fleet.firstView
	base := http.DefaultTransport.(*http.Transport).Clone()
	b.Cleanup(base.CloseIdleConnections)
	ways := []http.RoundTripper{base, c.Transport("bench", base), headersOnly{base}}
	req, err := http.NewRequest("GET", s.URL, nil)
	if err != nil {
		b.Fatal(err)
	}
	send := func(rt http.RoundTripper) time.Duration {
		start := time.Now()
		res, err := rt.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return time.Since(start)
	}
	for i := 0; i < 100; i++ {
		for _, rt := range ways {
			send(rt)
		}
	}
	times := make([][]float64, len(ways))
	for i := range times {
		times[i] = make([]float64, 0, b.N)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range ways {
			w := (i + k) % len(ways)
			times[w] = append(times[w], float64(send(ways[w])))
		}
	}
	b.StopTimer()
	for _, t := range times {
		sort.Float64s(t)
	}
	bare, transport, headers := times[0], times[1], times[2]
	b.ReportMetric(quantile(bare, 0.25), "bare-ns/req")
	b.ReportMetric(quantile(transport, 0.25)-quantile(bare, 0.25), "added-ns/req")
	b.ReportMetric(quantile(transport, 0.5)-quantile(bare, 0.5), "added-median-ns/req")
	b.ReportMetric(quantile(headers, 0.25)-quantile(bare, 0.25), "headers-ns/req")
}

// headersOnly is the least a RoundTripper that sends the protocol's headers does: a copy of the
// request with a header map of its own and the two headers.
type headersOnly struct{ base http.RoundTripper }

func (h headersOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	c := new(http.Request)
	*c = *r
	c.Header = make(http.Header, len(r.Header)+2)
	for k, v := range r.Header {
		c.Header[k] = v
	}
	c.Header[DeadlineHeader] = []string{"10000"}
	c.Header[AttemptHeader] = []string{"1"}
	return h.base.RoundTrip(c)
}

// quantile is the q-quantile of sorted xs.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[int(q*float64(len(xs)-1))]
}

// answering is a RoundTripper that answers at once, in process: what the Transport adds to a
// request shows without the network's noise.
type answering struct{}

func (answering) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
}

func BenchmarkRoundTripBare(b *testing.B) {
	req, _ := http.NewRequest("GET", "http://127.0.0.1:1/x", nil)
	var rt http.RoundTripper = answering{}
	b.ReportAllocs()
	defer reportCPU(b)()
	for i := 0; i < b.N; i++ {
		res, err := rt.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
	}
}

func BenchmarkRoundTripTransport(b *testing.B) {
	c := benchClient(b)
	<-c.Dependency("bench").fleet.firstView
	req, _ := http.NewRequest("GET", "http://127.0.0.1:1/x", nil)
	rt := c.Transport("bench", answering{})
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	for i := 0; i < b.N; i++ {
		res, err := rt.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
	}
}
