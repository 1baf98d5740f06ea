package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

func requireBusy(t *testing.T, err error, thread, holder string) {
	t.Helper()
	require.ErrorIs(t, err, graph.ErrThreadBusy)
	var be *graph.ThreadBusyError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, thread, be.Thread)
	assert.Equal(t, holder, be.Run)
}

// A lease gives a thread to one run: others are refused until it is
// released or expires; its holder renews it and hears a stop request.
func testLeases(t *testing.T, s graph.Checkpointer) {
	l, err := s.TakeThread(ctx(t), "le", "run-a", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, "run-a", l.Run)
	assert.False(t, l.Stop)
	assert.WithinDuration(t, time.Now().Add(time.Minute), l.Until, 30*time.Second)

	_, err = s.TakeThread(ctx(t), "le", "run-b", time.Minute)
	requireBusy(t, err, "le", "run-a")
	_, err = s.TakeThread(ctx(t), "other", "run-b", time.Minute)
	require.NoError(t, err, "threads are leased apart")

	renewed, err := s.TakeThread(ctx(t), "le", "run-a", 2*time.Minute)
	require.NoError(t, err, "the holder renews its lease")
	assert.True(t, renewed.Until.After(l.Until))

	stopped, err := s.StopThread(ctx(t), "le")
	require.NoError(t, err)
	assert.Equal(t, "run-a", stopped.Run)
	assert.True(t, stopped.Stop)
	renewed, err = s.TakeThread(ctx(t), "le", "run-a", time.Minute)
	require.NoError(t, err)
	assert.True(t, renewed.Stop, "the holder hears that it was asked to stop")

	require.NoError(t, s.ReleaseThread(ctx(t), "le", "run-b"), "releasing a lease one does not hold does nothing")
	_, err = s.TakeThread(ctx(t), "le", "run-b", time.Minute)
	requireBusy(t, err, "le", "run-a")
	require.NoError(t, s.ReleaseThread(ctx(t), "le", "run-a"))
	l, err = s.TakeThread(ctx(t), "le", "run-b", time.Minute)
	require.NoError(t, err)
	assert.False(t, l.Stop, "a new holder starts without a stop request")

	free, err := s.StopThread(ctx(t), "free")
	require.NoError(t, err)
	assert.Equal(t, graph.Lease{}, free, "a thread nobody holds")
	_, err = s.Get(ctx(t), graph.Thread("free"))
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound, "a lease makes no checkpoint")
}

// An expired lease is taken over; its old holder's writes are then refused,
// so a stalled run cannot overwrite the work of the run that took over.
func testLeaseExpiry(t *testing.T, s graph.Checkpointer) {
	_, err := s.TakeThread(ctx(t), "ex", "slow", time.Minute)
	require.NoError(t, err)
	put(t, s, withRun(checkpoint("ex", "c1", "", 0), "slow"))
	_, err = s.TakeThread(ctx(t), "ex", "slow", 20*time.Millisecond)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := s.TakeThread(ctx(t), "ex", "fast", time.Minute)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the expired lease is taken over")

	err = s.Put(ctx(t), withRun(checkpoint("ex", "c2", "c1", 1), "slow"))
	requireBusy(t, err, "ex", "fast")
	err = s.PutWrites(ctx(t), graph.Thread("ex").At("c1"), "slow", graph.TaskWrite{Task: 0, Node: "plain", Update: json.RawMessage(`{"by":"slow"}`)})
	requireBusy(t, err, "ex", "fast")
	require.NoError(t, s.PutWrites(ctx(t), graph.Thread("ex").At("c1"), "fast", graph.TaskWrite{Task: 0, Node: "plain", Update: json.RawMessage(`{"by":"fast"}`)}))
	put(t, s, withRun(checkpoint("ex", "c2", "c1", 1), "fast"))
	got, err := s.Get(ctx(t), graph.Thread("ex").At("c1"))
	require.NoError(t, err)
	require.Len(t, got.Writes, 1)
	assert.JSONEq(t, `{"by":"fast"}`, string(got.Writes[0].Update))
}

func withRun(cp *graph.Checkpoint, run string) *graph.Checkpoint { cp.Run = run; return cp }

// While a run holds a thread, no other writer may write to it or delete it.
func testLeaseFencing(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("fe", "c1", "", 0))
	_, err := s.TakeThread(ctx(t), "fe", "owner", time.Minute)
	require.NoError(t, err)
	requireBusy(t, s.Put(ctx(t), withRun(checkpoint("fe", "c2", "c1", 1), "intruder")), "fe", "owner")
	requireBusy(t, s.Put(ctx(t), withRun(checkpoint("fe", "c2", "c1", 1), "")), "fe", "owner")
	requireBusy(t, s.PutWrites(ctx(t), graph.Thread("fe").At("c1"), "intruder", graph.TaskWrite{Task: 0, Node: "plain"}), "fe", "owner")
	requireBusy(t, s.DeleteThread(ctx(t), "fe"), "fe", "owner")
	list, err := s.List(ctx(t), graph.Thread("fe"), 0)
	require.NoError(t, err)
	require.Len(t, list, 1, "nothing was written")
	assert.Empty(t, list[0].Writes)

	put(t, s, withRun(checkpoint("fe", "c2", "c1", 1), "owner"))
	require.NoError(t, s.PutWrites(ctx(t), graph.Thread("fe").At("c2"), "owner", graph.TaskWrite{Task: 0, Node: "plain"}))
	require.NoError(t, s.ReleaseThread(ctx(t), "fe", "owner"))
	require.NoError(t, s.DeleteThread(ctx(t), "fe"), "a released thread can be deleted")
	_, err = s.Get(ctx(t), graph.Thread("fe"))
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound)
	_, err = s.TakeThread(ctx(t), "fe", "next", time.Minute)
	assert.NoError(t, err, "the deleted thread's lease went with it")
}

// Of many runs taking one thread at once, exactly one gets it.
func testConcurrentTakers(t *testing.T, s graph.Checkpointer) {
	const takers = 16
	var won, busy atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range takers {
		wg.Go(func() {
			<-start
			_, err := s.TakeThread(context.Background(), "race", fmt.Sprintf("run-%02d", i), time.Minute)
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, graph.ErrThreadBusy):
				busy.Add(1)
			default:
				t.Errorf("taker %d: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int32(1), won.Load())
	assert.Equal(t, int32(takers-1), busy.Load())
}
