package server

import (
	"math"
	"sync"
	"time"
)

// Bounds of the Retry-After a full queue answers with (drainMeter).
const (
	// drainWindow is how far back the queue's drain rate is measured.
	drainWindow = 5 * time.Minute
	// drainSamples bounds the run ends kept: the rate of a fast queue is
	// that of its latest drainSamples runs.
	drainSamples = 64
	// minRetryAfter and maxRetryAfter bound the answer: a client is not
	// told to come back sooner than a second, nor later than a window.
	minRetryAfter = time.Second
	maxRetryAfter = drainWindow
	// unmeasuredRetryAfter is the answer before any run ended: nothing is
	// known yet of how long runs take.
	unmeasuredRetryAfter = 30 * time.Second
)

// drainMeter measures how fast the queue drains — runs leaving it per
// second over the last drainWindow (at most drainSamples of them) — so a
// full queue's Retry-After says when a place is likely to be free: one run's
// time at the observed rate, between minRetryAfter and maxRetryAfter. Before
// any run ended it is unmeasuredRetryAfter; when none ended for a whole
// window, runs are long and it is maxRetryAfter.
type drainMeter struct {
	now func() time.Time

	mu    sync.Mutex
	start time.Time   // when measuring began
	ends  []time.Time // the latest run ends, oldest first
}

func newDrainMeter(now func() time.Time) *drainMeter {
	if now == nil {
		now = time.Now
	}
	return &drainMeter{now: now, start: now()}
}

// ended records a run leaving the queue (finished, failed or cancelled:
// its place is free).
func (d *drainMeter) ended() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.ends) == drainSamples {
		d.ends = append(d.ends[:0], d.ends[1:]...)
	}
	d.ends = append(d.ends, d.now())
}

// retryAfter is how long a client refused by a full queue should wait,
// in whole seconds.
func (d *drainMeter) retryAfter() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	from := now.Add(-drainWindow)
	n := 0
	for i, end := range d.ends {
		if end.After(from) {
			n = len(d.ends) - i
			if i == 0 && n == drainSamples {
				// A full sample within the window: the rate is that of
				// its span, from its first end to now.
				from, n = end, n-1
			}
			break
		}
	}
	from = later(from, d.start)
	switch {
	case n == 0 && len(d.ends) == 0 && now.Sub(d.start) < drainWindow:
		return unmeasuredRetryAfter
	case n == 0:
		return maxRetryAfter
	}
	perRun := now.Sub(from) / time.Duration(n)
	secs := math.Ceil(perRun.Seconds())
	return min(max(time.Duration(secs)*time.Second, minRetryAfter), maxRetryAfter)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
