// Package drain measures how fast a queue of runs drains, so that a server
// refusing a run because its queue is full can say when to come back: a
// Retry-After of one run's time at the observed rate, not a constant.
package drain

import (
	"math"
	"sync"
	"time"
)

// Bounds of the Retry-After a full queue answers with (Meter).
const (
	// Window is how far back the queue's drain rate is measured.
	Window = 5 * time.Minute
	// Samples bounds the run ends kept: the rate of a fast queue is
	// that of its latest Samples runs.
	Samples = 64
	// MinRetryAfter and MaxRetryAfter bound the answer: a client is not
	// told to come back sooner than a second, nor later than a window.
	MinRetryAfter = time.Second
	MaxRetryAfter = Window
	// Unmeasured is the answer before any run ended: nothing is
	// known yet of how long runs take.
	Unmeasured = 30 * time.Second
)

// Meter measures how fast the queue drains — runs leaving it per
// second over the last Window (at most Samples of them) — so a
// full queue's Retry-After says when a place is likely to be free: one run's
// time at the observed rate, between MinRetryAfter and MaxRetryAfter. Before
// any run ended it is Unmeasured; when none ended for a whole
// window, runs are long and it is MaxRetryAfter.
type Meter struct {
	now func() time.Time

	mu    sync.Mutex
	start time.Time   // when measuring began
	ends  []time.Time // the latest run ends, oldest first
}

// New returns a Meter that starts measuring now; now is the clock (nil:
// time.Now).
func New(now func() time.Time) *Meter {
	if now == nil {
		now = time.Now
	}
	return &Meter{now: now, start: now()}
}

// Ended records a run leaving the queue (finished, failed or cancelled:
// its place is free).
func (d *Meter) Ended() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.ends) == Samples {
		d.ends = append(d.ends[:0], d.ends[1:]...)
	}
	d.ends = append(d.ends, d.now())
}

// RetryAfter is how long a client refused by a full queue should wait,
// in whole seconds.
func (d *Meter) RetryAfter() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	from := now.Add(-Window)
	n := 0
	for i, end := range d.ends {
		if end.After(from) {
			n = len(d.ends) - i
			if i == 0 && n == Samples {
				// A full sample within the window: the rate is that of
				// its span, from its first end to now.
				from, n = end, n-1
			}
			break
		}
	}
	from = later(from, d.start)
	switch {
	case n == 0 && len(d.ends) == 0 && now.Sub(d.start) < Window:
		return Unmeasured
	case n == 0:
		return MaxRetryAfter
	}
	perRun := now.Sub(from) / time.Duration(n)
	secs := math.Ceil(perRun.Seconds())
	return min(max(time.Duration(secs)*time.Second, MinRetryAfter), MaxRetryAfter)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
