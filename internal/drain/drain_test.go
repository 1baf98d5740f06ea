package drain

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// clock is a settable time for the drain meter.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func (c *clock) endRuns(d *Meter, n int, every time.Duration) {
	for range n {
		c.advance(every)
		d.Ended()
	}
}

// A full queue's Retry-After is one run's time at the rate runs have been
// leaving it: runs of 0.1 s give 1 s (the floor), not a constant 30 s.
func TestDrainMeterRetryAfter(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		run  func(c *clock, d *Meter)
		want time.Duration
	}{
		{"nothing ended yet", func(c *clock, d *Meter) { c.advance(10 * time.Second) }, Unmeasured},
		{"fast runs: the floor", func(c *clock, d *Meter) { c.endRuns(d, 20, 100*time.Millisecond) }, MinRetryAfter},
		{"one run every 7 s", func(c *clock, d *Meter) { c.endRuns(d, 10, 7*time.Second) }, 7 * time.Second},
		{"a fraction is rounded up", func(c *clock, d *Meter) { c.endRuns(d, 4, 2500*time.Millisecond) }, 3 * time.Second},
		{"only the window counts", func(c *clock, d *Meter) {
			c.endRuns(d, 30, time.Second) // long ago
			c.advance(Window)
			c.endRuns(d, 5, 20*time.Second) // the last 100 s of the window: 5 ends in 5 min
		}, Window / 5},
		{"a full sample measures its own span", func(c *clock, d *Meter) {
			c.advance(4 * time.Minute)
			c.endRuns(d, Samples+10, 2*time.Second)
		}, 2 * time.Second},
		{"nothing ended for a whole window: the ceiling", func(c *clock, d *Meter) {
			c.endRuns(d, 3, time.Second)
			c.advance(Window + time.Second)
		}, MaxRetryAfter},
		{"no run ever ended in a window", func(c *clock, d *Meter) { c.advance(Window) }, MaxRetryAfter},
		{"one run in 4.5 min", func(c *clock, d *Meter) { c.advance(4 * time.Minute); c.endRuns(d, 1, 30*time.Second) }, 270 * time.Second},
		{"a slow start: the time since the meter began", func(c *clock, d *Meter) { c.endRuns(d, 2, 15*time.Second) }, 15 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t: start}
			d := New(c.now)
			tt.run(c, d)
			assert.Equal(t, tt.want, d.RetryAfter())
		})
	}
}
