package browser

import (
	"context"
	"fmt"
)

// Slots bounds the browsers running at once among the sessions that share
// it, such as the runs of one server: a session takes a slot when it starts
// its browser and gives it back when it closes. The zero value is not
// usable; make one with NewSlots.
type Slots struct {
	ch chan struct{}
}

// NewSlots returns Slots for at most n browsers at once (n < 1 means 1).
func NewSlots(n int) *Slots {
	return &Slots{ch: make(chan struct{}, max(n, 1))}
}

// Cap is the most browsers that may run at once.
func (s *Slots) Cap() int { return cap(s.ch) }

// acquire takes a slot, waiting until one is free or ctx ends.
func (s *Slots) acquire(ctx context.Context) (release func(), err error) {
	if s == nil {
		return func() {}, nil
	}
	select {
	case s.ch <- struct{}{}:
		return func() { <-s.ch }, nil
	default:
	}
	select {
	case s.ch <- struct{}{}:
		return func() { <-s.ch }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("all %d browsers this server may run at once are in use, and none became free in time: try again later", cap(s.ch))
	}
}
