package sluice

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// configErrorLogInterval: a refused token is logged at most this often.
const configErrorLogInterval = 30 * time.Second

// link tracks whether the coordinator answers, and switches the client to and from its local
// fallback. One failed exchange is a hiccup: the fallback takes over after failuresBeforeFallback
// in a row, each from an exchange started after the previous one failed (overlapping exchanges
// add no evidence). A 503 overloaded is no evidence either way. A 401 or 403 is an answer, not an
// outage: it never counts toward the fallback and ends one under way.
type link struct {
	fallback atomic.Bool
	hasCfg   atomic.Bool

	mu             sync.Mutex
	configError    *ConfigError
	lastConfigLog  time.Time
	failures       int
	lastFailureAt  time.Time
	failuresNeeded int
	logger         Logger
	hooks          *Hooks
	// onFallback runs (under no lock) when the fallback takes over.
	onFallback func()
}

// failed counts a failed exchange started at startedAt (zero: now); true once the fallback decides.
func (l *link) failed(during string, err error, startedAt time.Time) bool {
	var cfg *ConfigError
	if errors.As(err, &cfg) {
		l.refused(during, cfg)
		return false
	}
	if l.fallback.Load() {
		return true
	}
	var ce *CoordinatorError
	if errors.As(err, &ce) && ce.Overloaded() {
		return false
	}
	l.mu.Lock()
	if !startedAt.IsZero() && startedAt.Before(l.lastFailureAt) {
		l.mu.Unlock()
		return false
	}
	l.lastFailureAt = time.Now()
	l.failures++
	if l.failures < l.failuresNeeded || l.fallback.Load() {
		active := l.fallback.Load()
		l.mu.Unlock()
		return active
	}
	l.fallback.Store(true)
	l.mu.Unlock()
	l.logger.Warn("coordinator unavailable; using the local fallback", "during", during, "error", err)
	if l.onFallback != nil {
		l.onFallback()
	}
	if l.hooks.OnFallback != nil {
		l.hooks.OnFallback(FallbackChange{Active: true, During: during, Err: err})
	}
	return true
}

func (l *link) succeeded(during string) {
	if !l.fallback.Load() && !l.hasCfg.Load() {
		l.mu.Lock()
		l.failures = 0
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	l.failures = 0
	if l.configError != nil {
		l.configError = nil
		l.hasCfg.Store(false)
		l.logger.Info("the coordinator accepts this client's token again", "during", during)
	}
	back := l.fallback.CompareAndSwap(true, false)
	l.mu.Unlock()
	if back {
		l.logger.Info("coordinator answers again; back to fleet decisions", "during", during)
		if l.hooks.OnFallback != nil {
			l.hooks.OnFallback(FallbackChange{Active: false, During: during})
		}
	}
}

func (l *link) refused(during string, err *ConfigError) {
	l.mu.Lock()
	previous := l.configError
	l.configError = err
	l.hasCfg.Store(true)
	l.failures = 0
	logIt := time.Since(l.lastConfigLog) >= configErrorLogInterval
	if logIt {
		l.lastConfigLog = time.Now()
	}
	ended := l.fallback.CompareAndSwap(true, false)
	l.mu.Unlock()
	if logIt {
		l.logger.Error("the coordinator refuses this client's token; check the token and namespace (no fallback is used for this)",
			"during", during, "error", err)
	}
	if ended && l.hooks.OnFallback != nil {
		l.hooks.OnFallback(FallbackChange{Active: false, During: during})
	}
	if (previous == nil || previous.Status != err.Status || previous.Message != err.Message) && l.hooks.OnConfigError != nil {
		l.hooks.OnConfigError(ConfigErrorEvent{Err: err, During: during})
	}
}

func (l *link) refusal() *ConfigError {
	if !l.hasCfg.Load() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.configError
}
