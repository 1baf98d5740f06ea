package graph_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// gate is a node that blocks until released, telling when it started.
type gate struct {
	started chan struct{}
	release chan struct{}
	runs    atomic.Int32
}

func newGate() *gate { return &gate{started: make(chan struct{}, 16), release: make(chan struct{})} }

func (g *gate) node(name string) graph.NodeFunc[tState] {
	return func(ctx context.Context, s tState) (graph.Update[tState], error) {
		g.runs.Add(1)
		g.started <- struct{}{}
		select {
		case <-g.release:
		case <-ctx.Done():
			return graph.Update[tState]{}, ctx.Err()
		}
		return graph.Writes(tLog.Add(name)), nil
	}
}

func gated(t *testing.T, saver graph.Checkpointer, gt *gate) *graph.Compiled[tState] {
	g := newT()
	g.AddNode("slow", gt.node("slow"))
	g.AddNode("after", logNode("after"))
	g.AddSequence(graph.Start, "slow", "after", graph.End)
	return compile(t, g, graph.WithCheckpointer(saver), graph.WithLease(testLease))
}

// testLease is longer than any of these tests: a lease that expires on a
// loaded machine hands the thread to the second run when the test means
// it to wait or to stop the first (a 90 ms lease hung CI that way). Runs
// of one process hear a stop request or a release at once, whatever the
// lease: with renewals every 20 minutes, a stop heard only by polling
// would hang these tests.
const testLease = time.Hour

type result struct {
	out tState
	err error
}

// A second run on a thread another run holds is refused before it writes
// anything; the first goes on undisturbed.
func TestBusyThreadIsRefused(t *testing.T) {
	saver := graph.NewMemorySaver()
	gt := newGate()
	c := gated(t, saver, gt)
	ctx := context.Background()
	first := make(chan result, 1)
	go func() {
		out, err := c.Invoke(ctx, tState{Items: []string{"first"}}, graph.Thread("b"), graph.RunID("run-1"))
		first <- result{out, err}
	}()
	<-gt.started
	before, err := c.History(ctx, graph.Thread("b"), 0)
	require.NoError(t, err)

	_, err = c.Invoke(ctx, tState{Items: []string{"second"}}, graph.Thread("b"))
	require.ErrorIs(t, err, graph.ErrThreadBusy)
	var be *graph.ThreadBusyError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "run-1", be.Run)
	assert.Contains(t, err.Error(), "nothing was written")
	_, err = c.Resume(ctx, graph.Thread("b"))
	require.ErrorIs(t, err, graph.ErrThreadBusy)
	_, err = c.UpdateState(ctx, graph.Thread("b"), graph.Writes(tN.Set(1)))
	require.ErrorIs(t, err, graph.ErrThreadBusy, "an edit waits for the run too")
	require.ErrorIs(t, saver.DeleteThread(ctx, "b"), graph.ErrThreadBusy)
	after, err := c.History(ctx, graph.Thread("b"), 0)
	require.NoError(t, err)
	assert.Equal(t, len(before), len(after), "the refused runs wrote nothing")

	close(gt.release)
	r := <-first
	require.NoError(t, r.err)
	assert.Equal(t, []string{"first"}, r.out.Items, "no input of a refused run is in the thread")
	out, err := c.Invoke(ctx, tState{Items: []string{"third"}}, graph.Thread("b"))
	require.NoError(t, err, "the thread is free once the run ends")
	assert.Equal(t, []string{"first", "third"}, out.Items)
}

// BusyEnqueue waits for the running run to end, then goes.
func TestBusyEnqueue(t *testing.T) {
	gt := newGate()
	c := gated(t, graph.NewMemorySaver(), gt)
	ctx := context.Background()
	first := make(chan result, 1)
	go func() {
		out, err := c.Invoke(ctx, tState{Items: []string{"first"}}, graph.Thread("q"))
		first <- result{out, err}
	}()
	<-gt.started
	second := make(chan result, 1)
	go func() {
		out, err := c.Invoke(ctx, tState{Items: []string{"second"}}, graph.Thread("q"), graph.OnBusy(graph.BusyEnqueue))
		second <- result{out, err}
	}()
	select {
	case r := <-second:
		t.Fatalf("the queued run went while the first held the thread: %+v", r)
	case <-time.After(100 * time.Millisecond): // it waits; nothing to wait for but absence
	}
	close(gt.release)
	require.NoError(t, (<-first).err)
	r := <-second
	require.NoError(t, r.err)
	assert.Equal(t, []string{"first", "second"}, r.out.Items, "the queued run went after the first")

	waiting, cancel := context.WithCancel(ctx)
	gt2 := newGate()
	c2 := gated(t, graph.NewMemorySaver(), gt2)
	go func() { _, _ = c2.Invoke(ctx, tState{}, graph.Thread("w")) }()
	<-gt2.started
	cancel()
	_, err := c2.Invoke(waiting, tState{}, graph.Thread("w"), graph.OnBusy(graph.BusyEnqueue))
	require.ErrorIs(t, err, context.Canceled, "waiting ends with the context")
	close(gt2.release)
}

// BusyInterrupt stops the running run, which keeps what it stored, and
// goes; BusyRollback also deletes the stopped run's checkpoints.
func TestBusyInterruptAndRollback(t *testing.T) {
	for _, tc := range []struct {
		strategy graph.BusyStrategy
		items    []string
		log      []string
	}{
		{graph.BusyInterrupt, []string{"first", "second"}, []string{"prep", "prep", "slow", "after"}},
		{graph.BusyRollback, []string{"second"}, []string{"prep", "slow", "after"}},
	} {
		t.Run(tc.strategy.String(), func(t *testing.T) {
			gt := newGate()
			g := newT()
			g.AddNode("prep", logNode("prep"))
			g.AddNode("slow", gt.node("slow"))
			g.AddNode("after", logNode("after"))
			g.AddSequence(graph.Start, "prep", "slow", "after", graph.End)
			c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()), graph.WithLease(testLease))
			ctx := context.Background()
			first := make(chan result, 1)
			go func() {
				out, err := c.Invoke(ctx, tState{Items: []string{"first"}}, graph.Thread("i"), graph.RunID("run-1"))
				first <- result{out, err}
			}()
			<-gt.started // prep is stored, slow runs
			done := make(chan result, 1)
			go func() {
				out, err := c.Invoke(ctx, tState{Items: []string{"second"}}, graph.Thread("i"), graph.OnBusy(tc.strategy), graph.RunID("run-2"))
				done <- result{out, err}
			}()
			r := <-first
			require.ErrorIs(t, r.err, graph.ErrRunStopped, "the running run is stopped")
			<-gt.started
			gt.release <- struct{}{} // the second run's slow node
			r2 := <-done
			require.NoError(t, r2.err)
			assert.Equal(t, tc.items, r2.out.Items)
			assert.Equal(t, tc.log, r2.out.Log)
			hist, err := c.History(ctx, graph.Thread("i"), 0)
			require.NoError(t, err)
			runs := map[string]int{}
			for _, h := range hist {
				runs[h.Run]++
			}
			if tc.strategy == graph.BusyRollback {
				assert.Zero(t, runs["run-1"], "the stopped run's checkpoints are gone")
			} else {
				assert.Equal(t, 2, runs["run-1"], "the stopped run's input and first step are kept")
			}
		})
	}
}

// A thread a run holds is deleted only once the run is stopped: the run
// ends with ErrRunStopped and nothing of the thread is left.
func TestDeleteThreadStopsTheRun(t *testing.T) {
	saver := graph.NewMemorySaver()
	gt := newGate()
	c := gated(t, saver, gt)
	ctx := context.Background()
	first := make(chan result, 1)
	go func() {
		out, err := c.Invoke(ctx, tState{}, graph.Thread("d"))
		first <- result{out, err}
	}()
	<-gt.started
	err := graph.DeleteThread(ctx, saver, "d", graph.BusyReject)
	require.ErrorIs(t, err, graph.ErrThreadBusy)
	require.NoError(t, graph.DeleteThread(ctx, saver, "d", graph.BusyInterrupt))
	r := <-first
	require.True(t, errors.Is(r.err, graph.ErrRunStopped), "%v", r.err)
	_, err = c.State(ctx, graph.Thread("d"))
	require.ErrorIs(t, err, graph.ErrCheckpointNotFound)
	n, err := saver.StoredBytes(ctx, "d")
	require.NoError(t, err)
	assert.Zero(t, n, "no orphan: the stopped run's late outcome was refused")
}
