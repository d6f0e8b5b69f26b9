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
// same server over the same http.Transport (one keep-alive connection), sent bare and through the
// Transport in alternating blocks, the order swapped every round so that the machine's drift falls
// on both alike. One op is one request each way. It reports each way's time per request (the
// median of its blocks) and what the Transport adds (the median of the rounds' differences), in
// wall time and in CPU time (the process's, the server's share included: the same on both sides).
// Run it a few times (-count) on a shared machine and read the spread.
func BenchmarkTransportOverhead(b *testing.B) {
	s := loopback(b)
	c := benchClient(b)
	<-c.Dependency("bench").fleet.firstView
	base := http.DefaultTransport.(*http.Transport).Clone()
	b.Cleanup(base.CloseIdleConnections)
	wrapped := c.Transport("bench", base)
	req, err := http.NewRequest("GET", s.URL, nil)
	if err != nil {
		b.Fatal(err)
	}
	send := func(rt http.RoundTripper, n int) {
		for i := 0; i < n; i++ {
			res, err := rt.RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
	cpu := func() time.Duration {
		var u syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
		return time.Duration(u.Utime.Nano() + u.Stime.Nano())
	}
	// timed sends n requests through rt: wall and CPU nanoseconds per request.
	timed := func(rt http.RoundTripper, n int) (wall, busy float64) {
		c0, t0 := cpu(), time.Now()
		send(rt, n)
		return float64(time.Since(t0)) / float64(n), float64(cpu()-c0) / float64(n)
	}
	send(base, 100)
	send(wrapped, 100)
	const block = 50
	var bareWall, wrapWall, diffWall, diffCPU []float64
	b.ReportAllocs()
	b.ResetTimer()
	for round := 0; round*block < b.N; round++ {
		n := b.N - round*block
		if n > block {
			n = block
		}
		var bw, bc, ww, wc float64
		if round%2 == 0 {
			bw, bc = timed(base, n)
			ww, wc = timed(wrapped, n)
		} else {
			ww, wc = timed(wrapped, n)
			bw, bc = timed(base, n)
		}
		bareWall, wrapWall = append(bareWall, bw), append(wrapWall, ww)
		diffWall, diffCPU = append(diffWall, ww-bw), append(diffCPU, wc-bc)
	}
	b.StopTimer()
	b.ReportMetric(median(bareWall), "bare-ns/req")
	b.ReportMetric(median(wrapWall), "transport-ns/req")
	b.ReportMetric(median(diffWall), "added-ns/req")
	b.ReportMetric(median(diffCPU), "added-cpu-ns/req")
}

// median is the middle of xs (which it sorts).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
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
