package graph

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// RetryPolicy retries a failing node. Zero fields take the defaults noted
// (those of LangGraph's RetryPolicy), except InitialInterval: its zero
// value means what it says, no wait between attempts (LangGraph's
// initial_interval=0). Give 500*time.Millisecond for LangGraph's default.
type RetryPolicy struct {
	MaxAttempts int // total attempts, the first included; default 3
	// InitialInterval is the wait before the second attempt; 0 (or less)
	// retries at once.
	InitialInterval time.Duration
	BackoffFactor   float64       // growth of the wait per attempt; default 2
	MaxInterval     time.Duration // cap on one wait; default 128s
	// Jitter spreads each wait randomly over [0.5, 1.5) of its value, so
	// parallel tasks that failed together do not retry together.
	Jitter bool
	// RetryOn decides whether an error is worth another attempt. Default:
	// everything except cancellation of the run, panics and errors marked
	// with Permanent.
	RetryOn func(error) bool
}

// Permanent marks err as not worth retrying under the default RetryOn.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// DefaultRetryOn is the RetryOn used when a policy leaves it nil.
func DefaultRetryOn(err error) bool {
	var p *permanentError
	var pe *PanicError
	return !errors.Is(err, context.Canceled) && !errors.As(err, &p) && !errors.As(err, &pe)
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 3
	}
	p.InitialInterval = max(p.InitialInterval, 0)
	if p.BackoffFactor < 1 {
		p.BackoffFactor = 2
	}
	if p.MaxInterval <= 0 {
		p.MaxInterval = 128 * time.Second
	}
	if p.RetryOn == nil {
		p.RetryOn = DefaultRetryOn
	}
	return p
}

// wait returns the pause before attempt n+1 (n ≥ 1 attempts made).
func (p RetryPolicy) wait(n int) time.Duration {
	d := float64(p.InitialInterval)
	for i := 1; i < n; i++ {
		d *= p.BackoffFactor
		if d > float64(p.MaxInterval) {
			break
		}
	}
	d = min(d, float64(p.MaxInterval))
	if p.Jitter {
		d *= 0.5 + rand.Float64()
	}
	return time.Duration(d)
}
