package sluice

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Logger receives the client's few log lines (fallback switches, a refused token), with
// alternating key-value pairs after the message. A *slog.Logger (Go 1.21) satisfies it as it is.
type Logger interface {
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
	Error(msg string, args ...any)
}

// NopLogger returns a Logger that drops every line.
func NopLogger() Logger { return nopLogger{} }

type nopLogger struct{}

func (nopLogger) Info(string, ...any)  {}
func (nopLogger) Warn(string, ...any)  {}
func (nopLogger) Error(string, ...any) {}

// TextLogger returns a Logger writing one logfmt-like line per call to w (os.Stderr when nil),
// the default of a client whose Config has no Logger.
func TextLogger(w io.Writer) Logger {
	if w == nil {
		w = os.Stderr
	}
	return &textLogger{w: w}
}

type textLogger struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *textLogger) Info(msg string, args ...any)  { l.log("INFO", msg, args) }
func (l *textLogger) Warn(msg string, args ...any)  { l.log("WARN", msg, args) }
func (l *textLogger) Error(msg string, args ...any) { l.log("ERROR", msg, args) }

func (l *textLogger) log(level, msg string, args []any) {
	var b strings.Builder
	fmt.Fprintf(&b, "time=%s level=%s msg=%q", time.Now().UTC().Format(time.RFC3339Nano), level, "sluice: "+msg)
	for i := 0; i+1 < len(args); i += 2 {
		fmt.Fprintf(&b, " %v=%q", args[i], fmt.Sprint(args[i+1]))
	}
	b.WriteByte('\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, b.String())
}
