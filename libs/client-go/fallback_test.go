package sluice

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// switchable is a TCP proxy to a coordinator that can be taken down (its port refuses
// connections, open ones are cut) and brought back on the same port.
type switchable struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	l      net.Listener
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func newSwitchable(t *testing.T, target string) *switchable {
	s := &switchable{t: t, target: target, conns: map[net.Conn]bool{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	s.serve(l)
	t.Cleanup(s.down)
	return s
}

func (s *switchable) url() string { return "http://" + s.addr }

func (s *switchable) serve(l net.Listener) {
	s.mu.Lock()
	s.l = l
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", s.target)
			if err != nil {
				in.Close()
				continue
			}
			s.mu.Lock()
			s.conns[in], s.conns[out] = true, true
			s.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
}

func (s *switchable) down() {
	s.mu.Lock()
	if s.l != nil {
		s.l.Close()
		s.l = nil
	}
	for c := range s.conns {
		c.Close()
	}
	s.conns = map[net.Conn]bool{}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *switchable) up() {
	l, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.serve(l)
}

func TestTheFallbackTakesOverAndHandsBack(t *testing.T) {
	f := needFleet(t)
	proxy := newSwitchable(t, f.urls[0][len("http://"):])
	var changes []bool
	var mu sync.Mutex
	c, ns := newTestClient(t, f, func(cfg *Config) {
		cfg.BaseURLs = []string{proxy.url()}
		cfg.PollInterval = 100 * time.Millisecond
		cfg.Hooks.OnFallback = func(ch FallbackChange) { mu.Lock(); changes = append(changes, ch.Active); mu.Unlock() }
	})
	dep := newScripted(t, 503, 200)
	pay := c.Dependency("pay")
	if err := pay.Do(context.Background(), dep.get, Idempotent()); err != nil {
		t.Fatal(err)
	}
	proxy.down()
	eventually(t, 5*time.Second, "the fallback takes over", func() bool { return c.Status().Mode == "fallback" })
	// The local fallback grants the retry: the call succeeds without the coordinator.
	dep.mu.Lock()
	dep.statuses = []int{503, 200}
	dep.headers = nil
	dep.mu.Unlock()
	if err := pay.Do(context.Background(), dep.get, Idempotent()); err != nil {
		t.Fatalf("the fallback's retry: %v", err)
	}
	proxy.up()
	eventually(t, 5*time.Second, "the coordinator decides again", func() bool { return c.Status().Mode == "fleet" })
	c.Flush()
	// The fleet charged the fallback's own retry to the budget: 1 granted + 1 reported.
	if v := f.view(t, ns, "pay"); v.Budget.Retries != 2 {
		t.Fatalf("the fleet counts %d retries, want 2", v.Budget.Retries)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(changes) != 2 || !changes[0] || changes[1] {
		t.Fatalf("fallback changes %v, want [true false]", changes)
	}
}

func TestTheFallbacksBudgetIsItsShareOfTheFleetsFloor(t *testing.T) {
	f := needFleet(t)
	c, ns := newTestClient(t, f, nil)
	// Another reporter of the same dependency: the fleet counts two.
	other, err := New(Config{BaseURLs: f.urls, Namespace: ns, Token: clientSecret, Reporter: "other", Logger: NopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ok := newScripted(t, 200)
	if err := other.Dependency("pay").Do(context.Background(), ok.get); err != nil {
		t.Fatal(err)
	}
	other.Flush()
	pay := c.Dependency("pay")
	if err := pay.Do(context.Background(), ok.get); err != nil {
		t.Fatal(err)
	}
	c.Flush()
	d := pay.fleet
	d.mu.Lock()
	share := d.share()
	d.mu.Unlock()
	if share != 0.5 {
		t.Fatalf("share %v, want 1/2", share)
	}
	// Decided locally: floor(0.1 × 1 request + 10/s × 1/2 × 10 s) = 50 grants.
	grants := 0
	for i := 0; i < 80; i++ {
		if allow, _, _, _ := d.localRetry(1, 5000, 0, time.Now()); allow {
			grants++
		}
	}
	if grants != 50 {
		t.Fatalf("the fallback granted %d retries, want 50", grants)
	}
}
