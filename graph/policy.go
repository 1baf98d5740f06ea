package graph

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// RetryPolicy retries a failing node. Zero fields take the defaults noted
// (those of LangGraph's RetryPolicy).
//
// InitialInterval 0 means the default wait (500ms), as in LangGraph where an
// omitted initial_interval is 0.5s; to retry without waiting — LangGraph's
// initial_interval=0 — give a negative interval, such as RetryImmediately.
type RetryPolicy struct {
	MaxAttempts int // total attempts, the first included; default 3
	// InitialInterval is the wait before the second attempt: default 500ms
	// when zero, no wait at all when negative (RetryImmediately).
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

// RetryImmediately, as a RetryPolicy's InitialInterval, retries a failed
// attempt at once, without waiting (any negative interval does the same).
const RetryImmediately time.Duration = -1

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
	switch {
	case p.InitialInterval == 0:
		p.InitialInterval = 500 * time.Millisecond
	case p.InitialInterval < 0:
		p.InitialInterval = 0 // RetryImmediately
	}
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
