package sluice

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Fallback is what the client does while the coordinator cannot answer.
type Fallback string

const (
	// FallbackLocal (the default): a retry budget and a breaker of this process alone, its budget
	// floor scaled to its share of the fleet (1 / the reporters the coordinator counted).
	FallbackLocal Fallback = "local"
	// FallbackFailOpen: retries up to MaxAttempts with backoff, no budget, no breaker.
	FallbackFailOpen Fallback = "fail-open"
	// FallbackFailClosed: no retries at all (first attempts still go out).
	FallbackFailClosed Fallback = "fail-closed"
)

// Config configures a Client. Only BaseURLs and Namespace are required.
type Config struct {
	// BaseURLs are the coordinators; the next one is tried when one does not answer or sheds load.
	BaseURLs []string
	// Namespace is the namespace every dependency of this client lives in.
	Namespace string
	// Token is a bearer token with the client role on Namespace.
	Token string
	// Reporter is this process's name in reports (default: host name and pid).
	Reporter string
	// Defaults apply to every dependency.
	Defaults DependencyConfig
	// ReportInterval is how often outcomes are reported (default 200 ms).
	ReportInterval time.Duration
	// DecisionTimeout is how long a call waits for the coordinator's answer to a retry or admit
	// ask (default 50 ms), from when the ask goes out.
	DecisionTimeout time.Duration
	// RequestTimeout bounds reports, view reads, the start check and decisions' requests
	// themselves (default 1 s).
	RequestTimeout time.Duration
	// ConnectTimeout bounds opening a connection to a coordinator (default 100 ms).
	ConnectTimeout time.Duration
	// PollInterval is how often views are polled while the event stream is down (default 1 s).
	PollInterval time.Duration
	// ViewRefresh is how often a dependency's view (policy) is re-read (default 5 s).
	ViewRefresh time.Duration
	// StreamIdleTimeout reopens an event stream silent for this long (default 45 s).
	StreamIdleTimeout time.Duration
	// NoEvents polls only, without the event stream.
	NoEvents bool
	// NoCoalescing asks the coordinator once per retry ask, with no batching and no held denials.
	NoCoalescing bool
	// Fallback is what to do while the coordinator cannot answer (default FallbackLocal).
	Fallback Fallback
	// FallbackShare fixes this process's share of the fleet (0, 1] for the local fallback; by
	// default it is learned from each report's answer.
	FallbackShare float64
	// FailuresBeforeFallback is how many failed exchanges in a row switch to the fallback (default 3).
	FailuresBeforeFallback int
	// SkipStartCheck makes New return without checking the token with the coordinator (an
	// unreachable coordinator is then the fallback's business, not an error).
	SkipStartCheck bool
	// Logger receives the client's log lines (default: a text logger on standard error).
	Logger Logger
	// Hooks are called on the client's events.
	Hooks Hooks
}

// DependencyConfig configures a dependency's calls; zero fields take the client's Defaults, then
// the built-in defaults.
type DependencyConfig struct {
	// MaxAttempts per call, the first included (default 3).
	MaxAttempts int
	// Deadline of a whole call, every attempt included, when ctx has none earlier. Unset, 10 s
	// bound the retries and backoff, and the first attempt runs with the caller's ctx as it is.
	Deadline time.Duration
	// AttemptTimeout bounds each attempt (default none: ctx and the call's deadline do).
	AttemptTimeout time.Duration
	// Idempotent makes every call idempotent unless it says otherwise.
	Idempotent bool
	// RetryWhenServingRetry retries even while serving a request that is itself a retry
	// (sluice-attempt > 1); by default the retry is left to that caller.
	RetryWhenServingRetry bool
	// FailWhenLimited gives up at once when a rate or concurrency limit refuses a call, instead of
	// waiting within the deadline.
	FailWhenLimited bool
	// Classifiers are tried before DefaultClassifier.
	Classifiers []Classifier
	// FallbackBackoff overrides the local fallback's backoff (default: the coordinator's policy's).
	FallbackBackoff *Backoff
}

func (d DependencyConfig) over(base DependencyConfig) DependencyConfig {
	if d.MaxAttempts == 0 {
		d.MaxAttempts = base.MaxAttempts
	}
	if d.Deadline == 0 {
		d.Deadline = base.Deadline
	}
	if d.AttemptTimeout == 0 {
		d.AttemptTimeout = base.AttemptTimeout
	}
	d.Idempotent = d.Idempotent || base.Idempotent
	d.RetryWhenServingRetry = d.RetryWhenServingRetry || base.RetryWhenServingRetry
	d.FailWhenLimited = d.FailWhenLimited || base.FailWhenLimited
	if d.Classifiers == nil {
		d.Classifiers = base.Classifiers
	}
	if d.FallbackBackoff == nil {
		d.FallbackBackoff = base.FallbackBackoff
	}
	return d
}

var builtinDefaults = DependencyConfig{MaxAttempts: 3, Deadline: 10 * time.Second}

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)

// Client is the Sluice client: one per process, shared by every dependency. It keeps each
// dependency's fleet breaker state current over one event stream, reports outcomes every ~200 ms,
// asks the coordinator before every retry, and falls back to a local budget and breaker when
// the coordinator cannot answer. Close stops every goroutine it started.
type Client struct {
	cfg      Config
	coord    *coordinator
	link     *link
	logger   Logger
	hooks    *Hooks
	random   func() float64
	reporter *reporter
	feed     *feed
	asks     *coalescer
	clock    *coarseClock
	ctx      context.Context
	cancel   context.CancelFunc

	mu       sync.Mutex
	wg       sync.WaitGroup
	closed   atomic.Bool
	deps     map[string]*fleetDep
	policies map[string]*Dependency

	uncheckedOnce sync.Once
	// defaultDeadlineSet: Config.Defaults.Deadline was configured.
	defaultDeadlineSet bool
}

// New makes a client and checks its token with the coordinator (an empty report, which changes
// nothing): a refused token is a *ConfigError, a coordinator that cannot be reached within
// RequestTimeout a *CoordinatorError (unless SkipStartCheck). Close the client when done.
func New(cfg Config) (*Client, error) {
	deadlineSet := cfg.Defaults.Deadline != 0
	if err := cfg.resolve(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		cfg:      cfg,
		coord:    newCoordinator(cfg.BaseURLs, cfg.Namespace, cfg.Token, cfg.ConnectTimeout),
		logger:   cfg.Logger,
		hooks:    &cfg.Hooks,
		random:   defaultRandom,
		ctx:      ctx,
		cancel:   cancel,
		deps:     map[string]*fleetDep{},
		policies: map[string]*Dependency{},

		defaultDeadlineSet: deadlineSet,
	}
	c.hooks = &c.cfg.Hooks
	c.link = &link{failuresNeeded: cfg.FailuresBeforeFallback, logger: cfg.Logger, hooks: c.hooks, onFallback: c.fallbackStarts}
	c.asks = &coalescer{c: c}
	c.clock = &coarseClock{c: c, base: time.Now()}
	c.reporter = newReporter(c)
	c.feed = newFeed(c)
	if !cfg.SkipStartCheck {
		if err := c.reporter.check(ctx); err != nil {
			cancel()
			c.coord.close()
			return nil, err
		}
	}
	c.goTracked(c.reporter.loop)
	c.goTracked(c.feed.pollLoop)
	if !cfg.NoEvents {
		c.goTracked(c.feed.streamLoop)
	}
	return c, nil
}

func (cfg *Config) resolve() error {
	if !namePattern.MatchString(cfg.Namespace) {
		return fmt.Errorf("sluice: Namespace must match %s, got %q", namePattern, cfg.Namespace)
	}
	if len(cfg.BaseURLs) == 0 {
		return errors.New("sluice: BaseURLs needs at least one coordinator URL")
	}
	for _, u := range cfg.BaseURLs {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return fmt.Errorf("sluice: a base URL must start with http:// or https://, got %q", u)
		}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.ReportInterval, 200*time.Millisecond)
	def(&cfg.DecisionTimeout, 50*time.Millisecond)
	def(&cfg.RequestTimeout, time.Second)
	def(&cfg.ConnectTimeout, 100*time.Millisecond)
	def(&cfg.PollInterval, time.Second)
	def(&cfg.ViewRefresh, 5*time.Second)
	def(&cfg.StreamIdleTimeout, 45*time.Second)
	if cfg.FailuresBeforeFallback <= 0 {
		cfg.FailuresBeforeFallback = 3
	}
	switch cfg.Fallback {
	case "":
		cfg.Fallback = FallbackLocal
	case FallbackLocal, FallbackFailOpen, FallbackFailClosed:
	default:
		return fmt.Errorf("sluice: Fallback must be local, fail-open or fail-closed, got %q", cfg.Fallback)
	}
	if cfg.FallbackShare < 0 || cfg.FallbackShare > 1 {
		return fmt.Errorf("sluice: FallbackShare must be in (0, 1], got %v", cfg.FallbackShare)
	}
	if cfg.Logger == nil {
		cfg.Logger = TextLogger(nil)
	}
	if cfg.Reporter == "" {
		host, _ := os.Hostname()
		cfg.Reporter = regexp.MustCompile(`[^A-Za-z0-9._:-]`).ReplaceAllString(fmt.Sprintf("%s-%d", host, os.Getpid()), "-")
		if len(cfg.Reporter) > 128 {
			cfg.Reporter = cfg.Reporter[:128]
		}
	}
	cfg.Defaults = cfg.Defaults.over(builtinDefaults)
	return nil
}

// goTracked runs fn on a goroutine that Close waits for; false once the client is closed.
func (c *Client) goTracked(fn func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		fn()
	}()
	return true
}

// Dependency is the policy of the dependency called name, with the client's defaults; the same
// *Dependency for the same name. It panics on a name the API refuses (^[a-z0-9][a-z0-9._-]{0,127}$).
func (c *Client) Dependency(name string) *Dependency {
	c.mu.Lock()
	if d := c.policies[name]; d != nil {
		c.mu.Unlock()
		return d
	}
	c.mu.Unlock()
	d := c.DependencyWith(name, DependencyConfig{})
	c.mu.Lock()
	defer c.mu.Unlock()
	if existing := c.policies[name]; existing != nil {
		return existing
	}
	c.policies[name] = d
	return d
}

// DependencyWith makes a policy for the dependency called name with its own settings, over the
// same fleet state (breaker, reports, fallback) as every other policy of that name. Make it once,
// at start-up, not per call.
func (c *Client) DependencyWith(name string, cfg DependencyConfig) *Dependency {
	if !namePattern.MatchString(name) {
		panic(fmt.Sprintf("sluice: a dependency name must match %s, got %q", namePattern, name))
	}
	deadlineSet := cfg.Deadline != 0 || c.defaultDeadlineSet
	cfg = cfg.over(c.cfg.Defaults)
	c.mu.Lock()
	f := c.deps[name]
	created := f == nil
	if created {
		f = newFleetDep(c, name, cfg.FallbackBackoff)
		c.deps[name] = f
	}
	c.mu.Unlock()
	if created {
		if !c.goTracked(func() { c.feed.read(f) }) {
			f.viewRead()
		}
		c.feed.follow()
	}
	return &Dependency{name: name, client: c, fleet: f, cfg: cfg, deadlineSet: deadlineSet}
}

func (c *Client) dependencies() []*fleetDep {
	c.mu.Lock()
	defer c.mu.Unlock()
	deps := make([]*fleetDep, 0, len(c.deps))
	for _, d := range c.deps {
		deps = append(deps, d)
	}
	return deps
}

// governsLocally is true while the local breaker governs calls.
func (c *Client) governsLocally() bool {
	return c.link.fallback.Load() && c.cfg.Fallback == FallbackLocal
}

// governingState is the breaker state that governs a dependency's calls at now.
func (c *Client) governingState(d *fleetDep, now time.Time) state {
	if c.link.fallback.Load() {
		switch c.cfg.Fallback {
		case FallbackLocal:
			d.mu.Lock()
			s := d.settleLocalLocked(now)
			d.unlock()
			return s
		case FallbackFailOpen:
			return closed
		}
	}
	return d.fleetStateAt(now)
}

func (c *Client) breakerInfo(d *fleetDep, now time.Time) BreakerInfo {
	if c.governsLocally() {
		return d.localFacts(now)
	}
	return d.fleetFacts(now)
}

func (c *Client) fallbackStarts() {
	now := time.Now()
	for _, d := range c.dependencies() {
		d.fallbackStarts(now)
	}
}

// waitFirstView waits (at most maxWait and RequestTimeout) for the first view of a dependency met
// for the first time: its limits come with it.
func (c *Client) waitFirstView(ctx context.Context, d *fleetDep, maxWait time.Duration) {
	if maxWait > c.cfg.RequestTimeout {
		maxWait = c.cfg.RequestTimeout
	}
	if maxWait <= 0 {
		return
	}
	t := time.NewTimer(maxWait)
	defer t.Stop()
	select {
	case <-d.firstView:
	case <-t.C:
	case <-ctx.Done():
	}
}

// Status says where decisions come from now.
type Status struct {
	// Mode is "fleet" (the coordinator decides), "fallback" (the local fallback decides) or
	// "config_error" (the coordinator refuses the token; ConfigError says how).
	Mode        string
	ConfigError *ConfigError
	// Streaming is true while the event stream of breaker states is open.
	Streaming bool
}

// Status says where decisions come from now.
func (c *Client) Status() Status {
	s := Status{Mode: "fleet", ConfigError: c.link.refusal(), Streaming: c.feed.connected.Load()}
	if s.ConfigError != nil {
		s.Mode = "config_error"
	} else if c.link.fallback.Load() {
		s.Mode = "fallback"
	}
	return s
}

// Flush sends the pending report now and waits for it (bounded by RequestTimeout).
func (c *Client) Flush() {
	c.reporter.flush()
}

// DecisionRequests is how many decision requests (retry, retries, admit) this client sent to the
// coordinators, re-asks included.
func (c *Client) DecisionRequests() int64 { return c.coord.asked.Load() }

// Close stops the event stream and the timers, sends the last report, and waits for every
// goroutine the client started. Calls made after it fail with ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	c.reporter.stop()
	c.reporter.flush()
	c.mu.Lock()
	c.closed.Store(true)
	c.mu.Unlock()
	c.cancel()
	c.asks.mu.Lock()
	waiting := c.asks.takeLocked()
	c.asks.mu.Unlock()
	for _, a := range waiting {
		a.err = ErrClosed
		close(a.settled)
	}
	c.wg.Wait()
	c.coord.close()
	return nil
}

// Ready checks the token with the coordinator (an empty report, which changes nothing), as New
// does unless SkipStartCheck: nil once the coordinator accepted it, a *ConfigError when it
// refuses it, a *CoordinatorError when it cannot be reached within RequestTimeout.
func (c *Client) Ready(ctx context.Context) error {
	return c.reporter.check(ctx)
}
