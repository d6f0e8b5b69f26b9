package sluice

import (
	"math"
	"math/rand"
)

// Backoff is the policy of the delay before a retry: exponential from Base, capped at Cap, with
// Jitter "full" (the default), "decorrelated" or "none". Times are milliseconds.
type Backoff struct {
	BaseMs int    `json:"baseMs"`
	CapMs  int    `json:"capMs"`
	Jitter string `json:"jitter"`
}

// delayMs is the backoff before retry `attempt` (1 is the first), never below retryAfterMs.
func (b Backoff) delayMs(attempt int, retryAfterMs int, random func() float64) int {
	if attempt < 1 {
		attempt = 1
	}
	exponent := attempt - 1
	if exponent > 30 {
		exponent = 30
	}
	exponential := math.Min(float64(b.CapMs), float64(b.BaseMs)*math.Pow(2, float64(exponent)))
	var delay float64
	switch b.Jitter {
	case "none":
		delay = exponential
	case "decorrelated":
		e := attempt - 2
		if e < 0 {
			e = 0
		}
		if e > 30 {
			e = 30
		}
		previous := math.Min(float64(b.CapMs), float64(b.BaseMs)*math.Pow(3, float64(e)))
		upper := math.Max(float64(b.BaseMs), previous*3)
		delay = math.Min(float64(b.CapMs), float64(b.BaseMs)+random()*(upper-float64(b.BaseMs)))
	default:
		delay = random() * exponential
	}
	d := int(math.Round(delay))
	if d < retryAfterMs {
		d = retryAfterMs
	}
	return d
}

// defaultRandom is math/rand's shared source (safe for concurrent use).
func defaultRandom() float64 { return rand.Float64() }
