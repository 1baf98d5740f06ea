package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy bounds the retries. The zero Policy is Default.
type Policy struct {
	// First is the wait before the second attempt (default 50ms); each
	// later wait doubles, up to Max (default 2s). Each wait is drawn
	// uniformly from [wait/2, wait] (jitter), so that clients cut off
	// together do not come back together.
	First, Max time.Duration
	// Budget is how long retries go on when ctx has no deadline (default
	// 30s); with a deadline they go on until the next wait would pass it.
	Budget time.Duration
}

// Default is the policy of the stores: a restart of the database of a few
// seconds is waited out; a longer outage fails within 30 s, or at the
// context's deadline.
var Default = Policy{First: 50 * time.Millisecond, Max: 2 * time.Second, Budget: 30 * time.Second}

// Do runs op with Default.
func Do(ctx context.Context, transient func(error) bool, op func(ctx context.Context, attempt int) error) error {
	return Default.Do(ctx, transient, op)
}

// Do runs op (attempt 0) and, while it fails with an error transient
// reports true for and time is left, again (attempt 1, 2, …) after a
// backoff. It returns nil, or op's last error: a non-transient one at
// once; a transient one when the budget or ctx's deadline is spent, or ctx
// is done. The error of an attempt after ctx ended is never retried.
func (p Policy) Do(ctx context.Context, transient func(error) bool, op func(ctx context.Context, attempt int) error) error {
	p = p.withDefaults()
	deadline, ok := ctx.Deadline()
	if budget := time.Now().Add(p.Budget); !ok || budget.Before(deadline) {
		deadline = budget
	}
	wait := p.First
	for attempt := 0; ; attempt++ {
		err := op(ctx, attempt)
		if err == nil || ctx.Err() != nil || !transient(err) {
			return err
		}
		d := wait/2 + rand.N(wait/2+1)
		if time.Now().Add(d).After(deadline) {
			return err
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, p.Max)
	}
}

func (p Policy) withDefaults() Policy {
	if p.First <= 0 {
		p.First = Default.First
	}
	if p.Max < p.First {
		p.Max = max(Default.Max, p.First)
	}
	if p.Budget <= 0 {
		p.Budget = Default.Budget
	}
	return p
}
