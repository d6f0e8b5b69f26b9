package sluice

import "math"

// policy is a dependency's policy document, as the coordinator serves it in GET /deps/{dep}.
type policy struct {
	Mode        string            `json:"mode"`
	RetryBudget retryBudgetPolicy `json:"retryBudget"`
	Backoff     Backoff           `json:"backoff"`
	Breaker     breakerPolicy     `json:"breaker"`
	RateLimit   *struct {
		Rate     int `json:"rate"`
		PeriodMs int `json:"periodMs"`
		Burst    int `json:"burst"`
	} `json:"rateLimit"`
	Concurrency *struct {
		Limit   int `json:"limit"`
		LeaseMs int `json:"leaseMs"`
	} `json:"concurrency"`
}

type retryBudgetPolicy struct {
	Mode                string  `json:"mode"`
	Ratio               float64 `json:"ratio"`
	MaxRatio            float64 `json:"maxRatio"`
	MinRetriesPerSecond float64 `json:"minRetriesPerSecond"`
	WindowSeconds       int     `json:"windowSeconds"`
	MaxAttempts         int     `json:"maxAttempts"`
}

type breakerPolicy struct {
	FailureRateThreshold  float64 `json:"failureRateThreshold"`
	SlowCallRateThreshold float64 `json:"slowCallRateThreshold"`
	SlowCallMs            int     `json:"slowCallMs"`
	MinimumCalls          int     `json:"minimumCalls"`
	WindowSeconds         int     `json:"windowSeconds"`
	OpenMs                int     `json:"openMs"`
	MaxOpenMs             int     `json:"maxOpenMs"`
	HalfOpenProbes        int     `json:"halfOpenProbes"`
	CloseAfterSuccesses   int     `json:"closeAfterSuccesses"`
}

// defaultPolicy is the coordinator's default dependency policy.
func defaultPolicy() policy {
	return policy{
		Mode:        "enforce",
		RetryBudget: retryBudgetPolicy{Ratio: 0.1, MinRetriesPerSecond: 10, WindowSeconds: 10, MaxAttempts: 3},
		Backoff:     Backoff{BaseMs: 50, CapMs: 2000, Jitter: "full"},
		Breaker: breakerPolicy{
			FailureRateThreshold: 0.5, SlowCallRateThreshold: 1.0, SlowCallMs: 1000, MinimumCalls: 20,
			WindowSeconds: 10, OpenMs: 30000, MaxOpenMs: 300000, HalfOpenProbes: 1, CloseAfterSuccesses: 3,
		},
	}
}

func (p *policy) limited() bool { return p.RateLimit != nil || p.Concurrency != nil }

const scale = 1_000_000

// budgetLimit is floor(ratio × requests + minRetriesPerSecond × share × windowSeconds), in
// integers as the coordinator computes it (millionths), so that floor never meets a binary fraction.
func budgetLimit(ratio, minPerSecond float64, windowSeconds int, requests int64) int64 {
	perMillion := int64(math.Round(ratio * scale))
	floorMillionths := int64(math.Round(minPerSecond*scale)) * int64(windowSeconds)
	millions := requests / scale
	rest := requests - millions*scale
	return perMillion*millions + (perMillion*rest+floorMillionths)/scale
}

// retryFits applies the budget's rule: fixed grants while retries < limit; adaptive grants while
// retries − succeeded < limit and retries < cap.
func retryFits(b retryBudgetPolicy, share float64, retries, succeeded, requests int64) bool {
	minPerSecond := b.MinRetriesPerSecond * share
	limit := budgetLimit(b.Ratio, minPerSecond, b.WindowSeconds, requests)
	if b.Mode == "fixed" {
		return retries+1 <= limit
	}
	maxRatio := b.MaxRatio
	if maxRatio == 0 {
		maxRatio = 0.5
	}
	if maxRatio < b.Ratio {
		maxRatio = b.Ratio
	}
	capacity := budgetLimit(maxRatio, minPerSecond, b.WindowSeconds, requests)
	failing := retries - succeeded
	if failing < 0 {
		failing = 0
	}
	return failing+1 <= limit && retries+1 <= capacity
}
