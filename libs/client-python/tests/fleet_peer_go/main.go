// Command fleet_peer_go is a Go process of the fleet (libs/client-go): it speaks the protocol of
// fleet_peer.mjs, one JSON command a line on stdin and one JSON answer a line on stdout.
//
//	{"op": "fail", "calls": 6}  → calls whose every attempt fails with a 503, one after another
//	{"op": "call"}              → one call that would succeed; its outcome and attempts
//	{"op": "wait_breaker", "state": "forced_open"}
//	{"op": "close"}
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	sluice "github.com/sluice-dev/sluice/libs/client-go"
)

type spec struct {
	BaseURLs  []string `json:"baseUrls"`
	Namespace string   `json:"namespace"`
	Token     string   `json:"token"`
	Dep       string   `json:"dep"`
}

type command struct {
	Op    string `json:"op"`
	Calls int    `json:"calls"`
	State string `json:"state"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "go peer: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var s spec
	if err := json.Unmarshal([]byte(os.Args[1]), &s); err != nil {
		return err
	}
	var grants atomic.Int64
	client, err := sluice.New(sluice.Config{
		BaseURLs: s.BaseURLs, Namespace: s.Namespace, Token: s.Token, Reporter: "peer-go",
		DecisionTimeout: 500 * time.Millisecond,
		Logger:          sluice.TextLogger(os.Stderr),
		Hooks:           sluice.Hooks{OnRetry: func(sluice.RetryEvent) { grants.Add(1) }},
	})
	if err != nil {
		return err
	}
	defer client.Close()
	dep := client.DependencyWith(s.Dep, sluice.DependencyConfig{MaxAttempts: 3})
	out := json.NewEncoder(os.Stdout)
	outcome := func(fn func(context.Context) error) map[string]any {
		var attempts int
		err := dep.Do(context.Background(), func(ctx context.Context) error { attempts++; return fn(ctx) },
			sluice.Idempotent(), sluice.Deadline(5*time.Second))
		if err == nil {
			return map[string]any{"ok": true, "attempts": attempts}
		}
		reason, operatorReason := "other", any(nil)
		var giveUp *sluice.GiveUpError
		if errors.As(err, &giveUp) {
			reason = string(giveUp.Reason)
			if r := giveUp.OperatorReason(); r != "" {
				operatorReason = r
			}
		}
		return map[string]any{"ok": false, "reason": reason, "operatorReason": operatorReason, "attempts": attempts}
	}
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		var c command
		if err := json.Unmarshal(lines.Bytes(), &c); err != nil {
			return err
		}
		switch c.Op {
		case "fail":
			reasons := []any{}
			for i := 0; i < c.Calls; i++ {
				failing := func(context.Context) error { return &sluice.StatusError{StatusCode: 503} }
				reasons = append(reasons, outcome(failing)["reason"])
			}
			err = out.Encode(map[string]any{"grants": grants.Load(), "reasons": reasons})
		case "call":
			err = out.Encode(outcome(func(context.Context) error { return nil }))
		case "wait_breaker":
			until := time.Now().Add(5 * time.Second)
			for dep.BreakerState() != c.State && time.Now().Before(until) {
				time.Sleep(10 * time.Millisecond)
			}
			err = out.Encode(map[string]any{"state": dep.BreakerState()})
		case "close":
			client.Close()
			return out.Encode(map[string]any{})
		default:
			return fmt.Errorf("unknown op %q", c.Op)
		}
		if err != nil {
			return err
		}
	}
	return lines.Err()
}
