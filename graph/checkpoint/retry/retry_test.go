package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/deepgraph/deepgraph/graph/checkpoint/retry"
)

var errBlip = errors.New("connection reset")

func isBlip(err error) bool { return errors.Is(err, errBlip) }

// fast keeps the tests quick; none of them measures time.
var fast = retry.Policy{First: time.Millisecond, Max: 2 * time.Millisecond, Budget: time.Minute}

func TestDoRetriesTransientUntilSuccess(t *testing.T) {
	var attempts []int
	err := fast.Do(context.Background(), isBlip, func(_ context.Context, attempt int) error {
		attempts = append(attempts, attempt)
		if attempt < 3 {
			return errBlip
		}
		return nil
	})
	assert.NoError(t, err)
	assert.Equal(t, []int{0, 1, 2, 3}, attempts)
}

func TestDoReturnsOtherErrorsAtOnce(t *testing.T) {
	errBad := errors.New("syntax error")
	n := 0
	err := fast.Do(context.Background(), isBlip, func(context.Context, int) error {
		n++
		return errBad
	})
	assert.ErrorIs(t, err, errBad)
	assert.Equal(t, 1, n)
}

func TestDoStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := fast.Do(ctx, isBlip, func(context.Context, int) error {
		n++
		if n == 3 {
			cancel()
		}
		return errBlip
	})
	assert.ErrorIs(t, err, errBlip)
	assert.Equal(t, 3, n, "no attempt after the context ended")
}

func TestDoGivesUpBeforeTheDeadline(t *testing.T) {
	// The first wait (at least half an hour) would pass the deadline: the
	// transient error is returned without waiting.
	p := retry.Policy{First: time.Hour, Max: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := 0
	err := p.Do(ctx, isBlip, func(context.Context, int) error { n++; return errBlip })
	assert.ErrorIs(t, err, errBlip)
	assert.Equal(t, 1, n)
	assert.NoError(t, ctx.Err(), "gave up before the deadline, not at it")
}

func TestDoBudgetWithoutDeadline(t *testing.T) {
	p := retry.Policy{First: time.Hour, Budget: time.Minute}
	n := 0
	err := p.Do(context.Background(), isBlip, func(context.Context, int) error { n++; return errBlip })
	assert.ErrorIs(t, err, errBlip)
	assert.Equal(t, 1, n)
}

func ExamplePolicy_Do() {
	errBlip := errors.New("connection reset by peer")
	transient := func(err error) bool { return errors.Is(err, errBlip) }
	p := retry.Policy{First: time.Millisecond}
	err := p.Do(context.Background(), transient, func(ctx context.Context, attempt int) error {
		fmt.Println("attempt", attempt)
		if attempt == 0 {
			return errBlip // the server restarted: wait and try again
		}
		return nil
	})
	fmt.Println("error:", err)
	// Output:
	// attempt 0
	// attempt 1
	// error: <nil>
}
