package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
)

// A submission holds the queue's lock only to check the bounds and take a
// place: while its run is being stored the lock is free, and the place it
// took counts toward the bound and keeps its thread busy. A failed store
// gives both back.
func TestAddHoldsNoLockAcrossTheStore(t *testing.T) {
	q := newQueue(&app.Store{Runs: &memEvents{}}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), func(s string) string { return s }, 1, 0, nil)
	t.Cleanup(func() { _ = q.drain(context.Background()) })

	entered, release := make(chan struct{}), make(chan struct{})
	errStore := errors.New("store down")
	done := make(chan error)
	go func() {
		done <- q.add(context.Background(), &runstore.Run{ID: "r1", Thread: "t1"}, nil, func(*runstore.Run) error {
			close(entered)
			<-release
			return errStore
		})
	}()
	<-entered
	if assert.True(t, q.mu.TryLock(), "the lock is free while the run is stored") {
		q.mu.Unlock()
	}
	assert.ErrorIs(t, q.add(context.Background(), &runstore.Run{ID: "r2", Thread: "t2"}, nil, func(*runstore.Run) error { return nil }),
		errQueueFull, "the place being stored counts toward the bound")
	close(release)
	require.ErrorIs(t, <-done, errStore)

	q.mu.Lock()
	defer q.mu.Unlock()
	assert.Zero(t, q.reserved, "the place is given back")
	assert.False(t, q.threads["t1"], "and the thread")
}
