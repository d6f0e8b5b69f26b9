// Command sluice-conformance is the Go client's driver for the conformance suite
// (test/conformance/README.md): it reads one run spec on stdin, runs its steps through one
// sluice.Client (each call an HTTP request through Client.Transport), and prints one JSON event
// per line on stdout. Logs go to stderr.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	sluice "github.com/sluice-dev/sluice/libs/client-go"
)

type spec struct {
	BaseURLs   []string `json:"baseUrls"`
	Namespace  string   `json:"namespace"`
	Token      string   `json:"token"`
	Reporter   string   `json:"reporter"`
	Dependency string   `json:"dependency"`
	TargetURL  string   `json:"targetUrl"`
	Client     struct {
		ReportIntervalMs  int             `json:"reportIntervalMs"`
		RequestTimeoutMs  int             `json:"requestTimeoutMs"`
		DecisionTimeoutMs int             `json:"decisionTimeoutMs"`
		PollIntervalMs    int             `json:"pollIntervalMs"`
		Backoff           *sluice.Backoff `json:"backoff"`
	} `json:"client"`
	Steps []step `json:"steps"`
}

type step struct {
	Op             string `json:"op"`
	ID             string `json:"id"`
	Method         string `json:"method"`
	Path           string `json:"path"`
	Idempotent     *bool  `json:"idempotent"`
	IdempotencyKey string `json:"idempotencyKey"`
	DeadlineMs     int    `json:"deadlineMs"`
	MaxAttempts    int    `json:"maxAttempts"`
	Calls          []step `json:"calls"`
	Ms             int    `json:"ms"`
	State          string `json:"state"`
	Mode           string `json:"mode"`
	TimeoutMs      int    `json:"timeoutMs"`
}

var out = struct {
	sync.Mutex
	enc *json.Encoder
}{enc: json.NewEncoder(os.Stdout)}

func emit(event map[string]any) {
	out.Lock()
	defer out.Unlock()
	_ = out.enc.Encode(event)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "go driver: "+format+"\n", args...)
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func main() {
	if err := run(); err != nil {
		logf("%v", err)
		os.Exit(1)
	}
}

func run() error {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	var s spec
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("the run spec is not JSON: %w", err)
	}
	cfg := sluice.Config{
		BaseURLs: s.BaseURLs, Namespace: s.Namespace, Token: s.Token, Reporter: s.Reporter,
		ReportInterval: ms(s.Client.ReportIntervalMs), RequestTimeout: ms(s.Client.RequestTimeoutMs),
		DecisionTimeout: ms(s.Client.DecisionTimeoutMs), PollInterval: ms(s.Client.PollIntervalMs),
		Defaults: sluice.DependencyConfig{FallbackBackoff: s.Client.Backoff},
		Logger:   sluice.TextLogger(os.Stderr),
		// The start check is made below, so that its failure is reported and the steps go on.
		SkipStartCheck: true,
	}
	client, err := sluice.New(cfg)
	if err != nil {
		return err
	}
	dep := client.Dependency(s.Dependency)
	if err := client.Ready(context.Background()); err != nil {
		logf("start check: %v", err)
	}
	emit(map[string]any{"event": "ready"})
	d := &driver{spec: &s, client: client, dep: dep}
	for _, st := range s.Steps {
		d.step(st)
	}
	client.Close()
	emit(map[string]any{"event": "done"})
	return nil
}

type driver struct {
	spec   *spec
	client *sluice.Client
	dep    *sluice.Dependency
}

func (d *driver) step(st step) {
	switch st.Op {
	case "call":
		d.call(st)
	case "concurrent":
		var wg sync.WaitGroup
		for _, c := range st.Calls {
			wg.Add(1)
			go func(c step) {
				defer wg.Done()
				d.call(c)
			}(c)
		}
		wg.Wait()
	case "sleep":
		time.Sleep(ms(st.Ms))
	case "wait_breaker":
		reached := waitFor(func() string { return d.dep.BreakerState() }, st.State, st.TimeoutMs)
		event := map[string]any{"event": "breaker", "state": d.dep.BreakerState()}
		if !reached {
			event["timedOut"] = true
		}
		emit(event)
	case "wait_mode":
		mode := func() string {
			if d.client.Status().Mode == "fallback" {
				return "fallback"
			}
			return "fleet"
		}
		reached := waitFor(mode, st.Mode, st.TimeoutMs)
		event := map[string]any{"event": "mode", "mode": mode()}
		if !reached {
			event["timedOut"] = true
		}
		emit(event)
	default:
		logf("unknown step %q", st.Op)
	}
}

func waitFor(read func() string, expected string, timeoutMs int) bool {
	if timeoutMs <= 0 {
		timeoutMs = 3000
	}
	until := time.Now().Add(ms(timeoutMs))
	for read() != expected && time.Now().Before(until) {
		time.Sleep(10 * time.Millisecond)
	}
	return read() == expected
}

// counting is the base RoundTripper under the client's Transport: it sees every attempt.
type counting struct {
	base     http.RoundTripper
	mu       sync.Mutex
	attempts int
	status   any
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.attempts++
	c.mu.Unlock()
	res, err := c.base.RoundTrip(r)
	c.mu.Lock()
	if err == nil {
		c.status = res.StatusCode
	} else {
		c.status = nil
	}
	c.mu.Unlock()
	return res, err
}

func (d *driver) call(st step) {
	counter := &counting{base: http.DefaultTransport, status: nil}
	hc := &http.Client{
		Transport:     d.client.Transport(d.spec.Dependency, counter),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	var opts []sluice.CallOption
	if st.Idempotent != nil {
		if *st.Idempotent {
			opts = append(opts, sluice.Idempotent())
		} else {
			opts = append(opts, sluice.NotIdempotent())
		}
	}
	if st.IdempotencyKey != "" {
		opts = append(opts, sluice.IdempotencyKey(st.IdempotencyKey))
	}
	if st.DeadlineMs > 0 {
		opts = append(opts, sluice.Deadline(ms(st.DeadlineMs)))
	}
	if st.MaxAttempts > 0 {
		opts = append(opts, sluice.MaxAttempts(st.MaxAttempts))
	}
	method := st.Method
	if method == "" {
		method = http.MethodGet
	}
	ctx := sluice.WithCallOptions(context.Background(), opts...)
	req, err := http.NewRequestWithContext(ctx, method, d.spec.TargetURL+st.Path, nil)
	if err != nil {
		emit(map[string]any{"event": "call", "id": st.ID, "ok": false, "reason": "not_retriable", "status": nil, "attempts": 0, "operatorReason": nil, "message": err.Error()})
		return
	}
	res, err := hc.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	counter.mu.Lock()
	attempts, status := counter.attempts, counter.status
	counter.mu.Unlock()
	switch {
	case err == nil && res.StatusCode >= 200 && res.StatusCode < 300:
		emit(map[string]any{"event": "call", "id": st.ID, "ok": true, "status": res.StatusCode, "attempts": attempts})
	case err == nil:
		emit(map[string]any{"event": "call", "id": st.ID, "ok": false, "reason": "not_retriable", "status": res.StatusCode, "attempts": attempts, "operatorReason": nil, "message": fmt.Sprintf("the dependency answered %d", res.StatusCode)})
	default:
		reason := "not_retriable"
		var operatorReason any
		var giveUp *sluice.GiveUpError
		if errors.As(err, &giveUp) {
			reason = string(giveUp.Reason)
			if r := giveUp.OperatorReason(); r != "" {
				operatorReason = r
			}
		}
		emit(map[string]any{"event": "call", "id": st.ID, "ok": false, "reason": reason, "status": status, "attempts": attempts, "operatorReason": operatorReason, "message": err.Error()})
	}
}
