package sluice

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The integration tests run against two built coordinators (npm run build) on the shared Redis,
// started here once. Without node or the build they are skipped, saying why; with
// SLUICE_REQUIRE_INTEGRATION=1 (CI) that is a failure instead.

const (
	clientSecret = "go-client-secret-0123456789"
	adminSecret  = "go-admin-secret-0123456789ab"
)

type fleet struct {
	urls      []string
	keyPrefix string
	procs     []*exec.Cmd
	output    []*bytes.Buffer
}

var (
	testFleet *fleet
	skipWhy   string
)

func TestMain(m *testing.M) {
	if os.Getenv("SLUICE_STORM_CHILD") == "1" {
		os.Exit(m.Run()) // a storm process: the coordinators run in its parent
	}
	flag.Parse()
	var ownRedis *exec.Cmd
	if *stormFlag && os.Getenv("SLUICE_TEST_REDIS_URL") == "" {
		// The storm measures the coordinators, not the neighbours on a shared Redis: it has a Redis
		// of its own, as the TypeScript storm does.
		url, cmd, err := startRedis()
		if err != nil {
			fmt.Fprintf(os.Stderr, "sluice: the storm's own Redis did not start (%v): the storm uses %s\n", err, redisURL())
		} else {
			os.Setenv("SLUICE_TEST_REDIS_URL", url)
			ownRedis = cmd
		}
	}
	f, err := startFleet()
	if err != nil {
		skipWhy = err.Error()
		fmt.Fprintf(os.Stderr, "sluice: integration tests skipped: %s\n", skipWhy)
	}
	testFleet = f
	code := m.Run()
	if f != nil {
		f.stop()
	}
	if ownRedis != nil {
		_ = ownRedis.Process.Kill()
		_ = ownRedis.Wait()
	}
	os.Exit(code)
}

// startRedis starts a redis-server of the tests' own on a spare port, without persistence: its URL
// once it answers PING.
func startRedis() (string, *exec.Cmd, error) {
	ports, err := spareTCPPorts(1)
	if err != nil {
		return "", nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(ports[0]), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	for until := time.Now().Add(10 * time.Second); time.Now().Before(until); time.Sleep(50 * time.Millisecond) {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			continue
		}
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		_, _ = io.WriteString(conn, "PING\r\n")
		line, _ := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if strings.HasPrefix(line, "+PONG") {
			return "redis://" + addr, cmd, nil
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return "", nil, errors.New("it did not answer PING within 10 s")
}

// needFleet skips (or, with SLUICE_REQUIRE_INTEGRATION=1, fails) a test when no coordinator runs.
func needFleet(t testing.TB) *fleet {
	t.Helper()
	if testFleet != nil {
		return testFleet
	}
	if os.Getenv("SLUICE_REQUIRE_INTEGRATION") == "1" {
		t.Fatalf("the integration tests need the coordinators: %s", skipWhy)
	}
	t.Skipf("no coordinator: %s (set SLUICE_REQUIRE_INTEGRATION=1 to make this a failure)", skipWhy)
	return nil
}

func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

func spareTCPPorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func redisURL() string {
	if u := os.Getenv("SLUICE_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379"
}

func startFleet() (*fleet, error) {
	node := os.Getenv("SLUICE_NODE")
	if node == "" {
		var err error
		if node, err = exec.LookPath("node"); err != nil {
			return nil, errors.New("node is not on PATH (or SLUICE_NODE)")
		}
	}
	main := filepath.Join(repoRoot(), "dist", "apps", "coordinator", "src", "main.js")
	if _, err := os.Stat(main); err != nil {
		return nil, fmt.Errorf("%s is missing: run npm run build", main)
	}
	ports, err := spareTCPPorts(2)
	if err != nil {
		return nil, err
	}
	tokens, _ := json.Marshal([]map[string]any{
		{"id": "go-client", "secret": clientSecret, "role": "client", "namespaces": []string{"*"}},
		{"id": "go-admin", "secret": adminSecret, "role": "admin", "namespaces": []string{"*"}},
	})
	f := &fleet{keyPrefix: "t:go:" + randomHex(4)}
	for _, port := range ports {
		cmd := exec.Command(node, main)
		cmd.Env = []string{
			"PATH=" + os.Getenv("PATH"),
			"SLUICE_PORT=" + strconv.Itoa(port),
			"SLUICE_HOST=127.0.0.1",
			"SLUICE_REDIS_URL=" + redisURL(),
			"SLUICE_KEY_PREFIX=" + f.keyPrefix,
			"SLUICE_TOKENS=" + string(tokens),
			"SLUICE_LOG_LEVEL=warn",
		}
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			f.stop()
			return nil, err
		}
		f.procs = append(f.procs, cmd)
		f.output = append(f.output, out)
		f.urls = append(f.urls, fmt.Sprintf("http://127.0.0.1:%d", port))
	}
	for i, u := range f.urls {
		if err := waitReady(u, 30*time.Second, f.procs[i]); err != nil {
			f.stop()
			return nil, fmt.Errorf("the coordinator at %s never became ready: %v\n%s", u, err, f.output[i])
		}
		if err := warm(u); err != nil {
			f.stop()
			return nil, fmt.Errorf("the coordinator at %s does not decide: %v\n%s", u, err, f.output[i])
		}
	}
	return f, nil
}

// warm takes a coordinator's first decisions, which load its scripts and code paths (~150 ms),
// before a test does. A 503 (a fresh Redis loading the scripts on a loaded machine answers the
// store's first calls late) is asked again, up to five times.
func warm(base string) error {
	scratch := newNamespace()
	ask := map[string]any{"dep": "warm", "attempt": 1, "status": 503}
	for path, body := range map[string]any{"deps/warm/retry": map[string]any{"attempt": 1, "status": 503}, "retries": map[string]any{"asks": []any{ask, ask}}} {
		data, _ := json.Marshal(body)
		for tries := 1; ; tries++ {
			req, _ := http.NewRequest("POST", base+"/v1/"+scratch+"/"+path, bytes.NewReader(data))
			req.Header.Set("Authorization", "Bearer "+clientSecret)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
			if res.StatusCode != 503 || tries == 5 {
				return fmt.Errorf("POST %s answered %d", path, res.StatusCode)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

func waitReady(base string, within time.Duration, proc *exec.Cmd) error {
	until := time.Now().Add(within)
	exited := make(chan struct{})
	go func() { _ = proc.Wait(); close(exited) }()
	for {
		select {
		case <-exited:
			return errors.New("the process exited")
		default:
		}
		res, err := http.Get(base + "/health/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return nil
			}
		}
		if time.Now().After(until) {
			if err == nil {
				err = fmt.Errorf("status %d", res.StatusCode)
			}
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop stops the coordinators (by their PIDs), then deletes their keys from the shared Redis.
func (f *fleet) stop() {
	for _, p := range f.procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range f.procs {
		until := time.Now().Add(10 * time.Second)
		for p.Process.Signal(syscall.Signal(0)) == nil && time.Now().Before(until) {
			time.Sleep(20 * time.Millisecond)
		}
		_ = p.Process.Kill()
	}
	if err := deleteKeys(redisURL(), f.keyPrefix+":*"); err != nil {
		fmt.Fprintf(os.Stderr, "sluice: could not delete the test keys %s*: %v\n", f.keyPrefix, err)
	}
}

// deleteKeys removes the keys matching pattern (SCAN and UNLINK, in RESP over one connection).
func deleteKeys(url, pattern string) error {
	addr := strings.TrimPrefix(url, "redis://")
	if i := strings.IndexByte(addr, '/'); i >= 0 {
		addr = addr[:i]
	}
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(conn)
	command := func(args ...string) (any, error) {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := io.WriteString(conn, b.String()); err != nil {
			return nil, err
		}
		return readRESP(r)
	}
	cursor := "0"
	for {
		reply, err := command("SCAN", cursor, "MATCH", pattern, "COUNT", "1000")
		if err != nil {
			return err
		}
		parts, ok := reply.([]any)
		if !ok || len(parts) != 2 {
			return fmt.Errorf("unexpected SCAN reply %v", reply)
		}
		cursor, _ = parts[0].(string)
		keys, _ := parts[1].([]any)
		if len(keys) > 0 {
			args := []string{"UNLINK"}
			for _, k := range keys {
				args = append(args, k.(string))
			}
			if _, err := command(args...); err != nil {
				return err
			}
		}
		if cursor == "0" {
			return nil
		}
	}
}

func readRESP(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty RESP line")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return nil, errors.New(line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		items := make([]any, 0, n)
		for i := 0; i < n; i++ {
			item, err := readRESP(r)
			if err != nil {
				return nil, err
			}
			items = append(items, item)
		}
		return items, nil
	}
	return nil, fmt.Errorf("unexpected RESP %q", line)
}

// newNamespace is a namespace no other test uses.
func newNamespace() string { return "go-" + randomHex(4) }

// admin calls the admin API of the first coordinator; out receives the JSON answer.
func (f *fleet) admin(t testing.TB, method, path string, body any, out any) {
	t.Helper()
	var reader io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		reader = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, f.urls[0]+path, reader)
	req.Header.Set("Authorization", "Bearer "+adminSecret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	text, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		t.Fatalf("%s %s answered %d: %s", method, path, res.StatusCode, text)
	}
	if out != nil {
		if err := json.Unmarshal(text, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// depView reads GET /v1/{ns}/deps/{dep} (with the admin token).
type depView struct {
	Breaker struct {
		State string `json:"state"`
	} `json:"breaker"`
	Budget struct {
		Retries  int `json:"retries"`
		Requests int `json:"requests"`
		Limit    int `json:"limit"`
	} `json:"budget"`
}

func (f *fleet) view(t testing.TB, ns, dep string) depView {
	var v depView
	f.admin(t, "GET", "/v1/"+ns+"/deps/"+dep, nil, &v)
	return v
}

// newTestClient is a client of the test fleet on a fresh namespace, closed when the test ends.
func newTestClient(t testing.TB, f *fleet, mutate func(*Config)) (*Client, string) {
	t.Helper()
	ns := newNamespace()
	// A decision time that a loaded test machine and the race detector leave room for (the
	// default, 50 ms, is for production coordinators nearby).
	cfg := Config{BaseURLs: f.urls, Namespace: ns, Token: clientSecret, Logger: testLogger{t}, DecisionTimeout: time.Second}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, cfg.Namespace
}

type testLogger struct{ t testing.TB }

func (l testLogger) Info(msg string, args ...any)  { l.t.Logf("INFO %s %v", msg, args) }
func (l testLogger) Warn(msg string, args ...any)  { l.t.Logf("WARN %s %v", msg, args) }
func (l testLogger) Error(msg string, args ...any) { l.t.Logf("ERROR %s %v", msg, args) }

// scripted is a dependency that answers each request with the next status of its script (the
// last repeats), and records what it got.
type scripted struct {
	mu       sync.Mutex
	statuses []int
	headers  []http.Header
	header   http.Header
	server   *http.Server
	url      string
}

func newScripted(t testing.TB, statuses ...int) *scripted {
	s := &scripted{statuses: statuses, header: http.Header{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.url = "http://" + l.Addr().String()
	s.server = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		n := len(s.headers)
		s.headers = append(s.headers, r.Header.Clone())
		status := s.statuses[len(s.statuses)-1]
		if n < len(s.statuses) {
			status = s.statuses[n]
		}
		for k, v := range s.header {
			w.Header()[k] = v
		}
		s.mu.Unlock()
		w.WriteHeader(status)
	})}
	go func() { _ = s.server.Serve(l) }()
	t.Cleanup(func() { s.server.Close() })
	return s
}

func (s *scripted) requests() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

// get is a Do function that GETs the scripted dependency and fails with its status.
func (s *scripted) get(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/x", nil)
	OutgoingHeaders(ctx, req.Header)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if retriableStatus(res.StatusCode) {
		ra, _ := ParseRetryAfter(res.Header.Get("Retry-After"), time.Now())
		return &StatusError{StatusCode: res.StatusCode, RetryAfter: ra}
	}
	return nil
}

func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	until := time.Now().Add(within)
	for !cond() {
		if time.Now().After(until) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
