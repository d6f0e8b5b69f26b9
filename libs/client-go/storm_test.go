package sluice

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The storm: 8 processes × 50 calls failing at once (the dependency gathers their first attempts
// and fails them together, as the TypeScript storm's does), through recording proxies in front of
// the coordinators. Run it with: go test -run TestStorm -storm -v
var (
	stormFlag     = flag.Bool("storm", false, "run the storm (8 processes × 50 calls failing at once)")
	stormDecision = flag.Duration("storm-decision-timeout", 50*time.Millisecond, "the storm processes' DecisionTimeout (the client's default unless set)")
	// As the TypeScript storm's callers: in a deployment the callers run on hosts of their own; here
	// 8 of them share 2 cores with the coordinators and at an equal priority take the CPU the
	// coordinators need to answer. 0 shares the CPU evenly.
	stormNice = flag.Int("storm-caller-nice", 19, "the storm processes' nice value (19: the coordinators first, as callers on hosts of their own)")
)

const (
	stormProcesses = 8
	stormCalls     = 50
)

// stormResult is what one storm process reports.
type stormResult struct {
	Calls     int            `json:"calls"`
	Reasons   map[string]int `json:"reasons"`
	Retries   int64          `json:"retries"`
	Decisions int64          `json:"decisions"`
}

// recorder is a reverse proxy to one coordinator that counts the storm's decision requests (not
// the warm-up's) and 503 answers.
type recorder struct {
	decisions, unavailable atomic.Int64
	mu                     sync.Mutex
	latencies              []time.Duration
	server                 *httptest.Server
}

func newRecorder(t *testing.T, target string) *recorder {
	u, _ := url.Parse(target)
	proxy := httputil.NewSingleHostReverseProxy(u)
	// Connections of its own, kept: the recorder adds a hop, not a connection per decision.
	transport := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(transport.CloseIdleConnections)
	proxy.Transport = transport
	r := &recorder{}
	proxy.ModifyResponse = func(res *http.Response) error {
		if res.StatusCode == 503 {
			r.unavailable.Add(1)
		}
		return nil
	}
	r.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !asksForTheStorm(req) {
			proxy.ServeHTTP(w, req)
			return
		}
		r.decisions.Add(1)
		start := time.Now()
		proxy.ServeHTTP(w, req)
		r.mu.Lock()
		r.latencies = append(r.latencies, time.Since(start))
		r.mu.Unlock()
	}))
	t.Cleanup(r.server.Close)
	return r
}

// asksForTheStorm says whether req asks for decisions on the storm's dependency (a batch's body is
// read, and put back for the proxy).
func asksForTheStorm(req *http.Request) bool {
	p := req.URL.Path
	if strings.HasSuffix(p, "/deps/storm/retry") || strings.HasSuffix(p, "/deps/storm/admit") {
		return true
	}
	if !strings.HasSuffix(p, "/retries") {
		return false
	}
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	return bytes.Contains(body, []byte(`"dep":"storm"`))
}

func TestStorm(t *testing.T) {
	if os.Getenv("SLUICE_STORM_CHILD") == "1" {
		stormProcess(t)
		return
	}
	if !*stormFlag {
		t.Skip("the storm runs with -storm")
	}
	f := needFleet(t)
	ns := newNamespace()
	// As the TypeScript storm: the breaker out of the way, so that every grant can be used.
	for _, name := range []string{"storm", "storm-warm"} {
		f.admin(t, "PUT", "/admin/v1/"+ns+"/policies/deps/"+name, map[string]any{"breaker": map[string]any{"minimumCalls": 1000000}}, nil)
	}
	var recorders []*recorder
	var urls []string
	for _, u := range f.urls {
		r := newRecorder(t, u)
		recorders = append(recorders, r)
		urls = append(urls, r.server.URL)
	}
	// The dependency holds the storm's first attempts until all have come (or until 3 s after the
	// first, on a starved machine), then fails them at once; retries fail at once.
	var depRequests atomic.Int64
	var gathered atomic.Int64
	release := make(chan struct{})
	var releaseOnce sync.Once
	failAll := func() { releaseOnce.Do(func() { close(release) }) }
	dep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/warm" {
			// Before the storm: a first attempt fails, its retry succeeds.
			if r.Header.Get(AttemptHeader) == "1" {
				w.WriteHeader(503)
			}
			return
		}
		depRequests.Add(1)
		if r.Header.Get(AttemptHeader) == "1" {
			switch gathered.Add(1) {
			case 1:
				time.AfterFunc(3*time.Second, failAll)
			case stormProcesses * stormCalls:
				failAll()
			}
			<-release
		}
		w.WriteHeader(503)
	}))
	defer dep.Close()
	startAt := time.Now().Add(5 * time.Second).UnixMilli()
	results := make([]stormResult, stormProcesses)
	var wg sync.WaitGroup
	for i := 0; i < stormProcesses; i++ {
		cmd := exec.Command("nice", "-n", strconv.Itoa(*stormNice), os.Args[0], "-test.run=^TestStorm$", "-test.v")
		cmd.Env = append(os.Environ(), "SLUICE_STORM_CHILD=1", "SLUICE_STORM_URLS="+strings.Join(urls, ","),
			"SLUICE_STORM_NS="+ns, "SLUICE_STORM_DEP="+dep.URL, "SLUICE_STORM_START="+strconv.FormatInt(startAt, 10),
			"SLUICE_STORM_REPORTER=storm-"+strconv.Itoa(i), "SLUICE_STORM_DECISION="+stormDecision.String())
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			scanner := bufio.NewScanner(out)
			for scanner.Scan() {
				if line := scanner.Text(); strings.HasPrefix(line, "STORM ") {
					_ = json.Unmarshal([]byte(line[len("STORM "):]), &results[i])
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("storm process %d: %v", i, err)
			}
		}(i)
	}
	wg.Wait()
	grants := f.view(t, ns, "storm").Budget.Retries
	var decisions, unavailable, clientDecisions, retries int64
	failed := 0
	reasons := map[string]int{}
	var latencies []time.Duration
	for _, r := range recorders {
		decisions += r.decisions.Load()
		unavailable += r.unavailable.Load()
		latencies = append(latencies, r.latencies...)
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	var median, slowest time.Duration
	if n := len(latencies); n > 0 {
		median, slowest = latencies[n/2], latencies[n-1]
	}
	for _, r := range results {
		failed += r.Calls
		clientDecisions += r.Decisions
		retries += r.Retries
		for reason, n := range r.Reasons {
			reasons[reason] += n
		}
	}
	perCall := float64(decisions) / float64(failed)
	summary := fmt.Sprintf("storm (DecisionTimeout %v, callers at nice %d): %d processes × %d calls failing at once: %d failed calls, %d decision requests (%.3f per failed call; %d counted by the clients), "+
		"answered in %v (median) and %v (slowest), %d grants, %d retries announced, %d dependency requests, %d answers 503 from the coordinators, give-ups %v",
		*stormDecision, *stormNice, stormProcesses, stormCalls, failed, decisions, perCall, clientDecisions, median.Round(time.Millisecond), slowest.Round(time.Millisecond), grants, retries, depRequests.Load(), unavailable, reasons)
	t.Log(summary)
	fmt.Println(summary)
	if failed != stormProcesses*stormCalls {
		t.Fatalf("%d calls ended, want %d", failed, stormProcesses*stormCalls)
	}
	if perCall > 0.1 {
		t.Errorf("%.3f decision requests per failed call, want at most 0.1", perCall)
	}
	if depRequests.Load() != int64(failed)+int64(grants) {
		t.Errorf("every grant is used: %d grants, %d dependency requests for %d calls", grants, depRequests.Load(), failed)
	}
	if reasons[string(ReasonCoordinatorUnavailable)] != 0 || unavailable != 0 {
		t.Errorf("no coordinator_unavailable (%d), no 503 (%d)", reasons[string(ReasonCoordinatorUnavailable)], unavailable)
	}
}

// stormProcess is one process of the storm: 50 calls to a dependency that always fails, at once.
func stormProcess(t *testing.T) {
	var retries atomic.Int64
	decisionTimeout, _ := time.ParseDuration(os.Getenv("SLUICE_STORM_DECISION"))
	c, err := New(Config{
		DecisionTimeout: decisionTimeout,
		BaseURLs:        strings.Split(os.Getenv("SLUICE_STORM_URLS"), ","), Namespace: os.Getenv("SLUICE_STORM_NS"),
		Token: clientSecret, Reporter: os.Getenv("SLUICE_STORM_REPORTER"), Logger: TextLogger(os.Stderr),
		Hooks: Hooks{OnRetry: func(e RetryEvent) {
			if e.Dependency == "storm" {
				retries.Add(1)
			}
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	dep := c.Dependency("storm")
	<-dep.fleet.firstView
	target := os.Getenv("SLUICE_STORM_DEP")
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: stormCalls}}
	// As the TypeScript storm's callers: the decision path and the connections warmed first, on a
	// dependency of its own (its first attempts fail, their retries succeed), twice.
	warm := c.Dependency("storm-warm")
	<-warm.fleet.firstView
	warmCall := func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, "GET", target+"/warm", nil)
		OutgoingHeaders(ctx, req.Header)
		res, err := hc.Do(req)
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			return &StatusError{StatusCode: res.StatusCode}
		}
		return nil
	}
	for round := 0; round < 2; round++ {
		var warming sync.WaitGroup
		for i := 0; i < stormCalls; i++ {
			warming.Add(1)
			go func() {
				defer warming.Done()
				_ = warm.Do(context.Background(), warmCall, Idempotent())
			}()
		}
		warming.Wait()
	}
	start, _ := strconv.ParseInt(os.Getenv("SLUICE_STORM_START"), 10, 64)
	time.Sleep(time.Until(time.UnixMilli(start)))
	warmDecisions := c.DecisionRequests()
	call := func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, "GET", target, nil)
		OutgoingHeaders(ctx, req.Header)
		res, err := hc.Do(req)
		if err != nil {
			return err
		}
		res.Body.Close()
		return &StatusError{StatusCode: res.StatusCode}
	}
	result := stormResult{Reasons: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < stormCalls; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := dep.Do(context.Background(), call, Idempotent())
			reason := "other"
			var giveUp *GiveUpError
			if errors.As(err, &giveUp) {
				reason = string(giveUp.Reason)
			}
			mu.Lock()
			result.Calls++
			result.Reasons[reason]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	result.Decisions = c.DecisionRequests() - warmDecisions
	c.Close()
	result.Retries = retries.Load()
	line, _ := json.Marshal(result)
	fmt.Printf("STORM %s\n", line)
}
