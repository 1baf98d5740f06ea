package graph_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// watchedSaver is a MemorySaver whose Put can be held until released, and
// made to fail.
type watchedSaver struct {
	*graph.MemorySaver
	hold    func(cp *graph.Checkpoint) <-chan struct{} // nil: do not hold
	failPut func(cp *graph.Checkpoint) error
	puts    atomic.Int32
	writes  atomic.Int32
}

func (w *watchedSaver) Put(ctx context.Context, cp *graph.Checkpoint) error {
	if w.hold != nil {
		if ch := w.hold(cp); ch != nil {
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	if w.failPut != nil {
		if err := w.failPut(cp); err != nil {
			return err
		}
	}
	w.puts.Add(1)
	return w.MemorySaver.Put(ctx, cp)
}

func (w *watchedSaver) PutWrites(ctx context.Context, at graph.Ref, run string, ws ...graph.TaskWrite) error {
	w.writes.Add(1)
	return w.MemorySaver.PutWrites(ctx, at, run, ws...)
}

// stored returns the steps of the thread's stored checkpoints, newest first.
func stored(t *testing.T, s graph.Checkpointer, thread string) []int {
	t.Helper()
	cps, err := s.List(context.Background(), graph.Thread(thread), 0)
	require.NoError(t, err)
	steps := []int{}
	for _, cp := range cps {
		steps = append(steps, cp.Step)
	}
	return steps
}

// chain4 is a → b → c → d, each node reporting what the store holds of the
// thread when it runs.
func chain4(t *testing.T, s graph.Checkpointer, seen map[string][]int, mu *sync.Mutex, opts ...graph.Option) *graph.Compiled[tState] {
	g := newT()
	for _, name := range []string{"a", "b", "c", "d"} {
		g.AddNode(name, func(ctx context.Context, st tState) (graph.Update[tState], error) {
			steps := stored(t, s, "d")
			mu.Lock()
			seen[name] = steps
			mu.Unlock()
			return graph.Writes(tLog.Add(name)), nil
		})
	}
	g.AddSequence(graph.Start, "a", "b", "c", "d", graph.End)
	return compile(t, g, append([]graph.Option{graph.WithCheckpointer(s)}, opts...)...)
}

func TestDurabilityWhatIsSavedWhen(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex

	// sync: each step's checkpoint is stored before the next step runs.
	s := graph.NewMemorySaver()
	seen := map[string][]int{}
	_, err := chain4(t, s, seen, &mu).Invoke(ctx, tState{}, graph.Thread("d"))
	require.NoError(t, err)
	assert.Equal(t, []int{2, 1, 0}, seen["c"], "sync: c sees the checkpoints of the input, a and b")
	assert.Equal(t, []int{3, 2, 1, 0}, seen["d"])
	assert.Equal(t, []int{4, 3, 2, 1, 0}, stored(t, s, "d"))

	// exit: nothing is stored while the run runs; its last checkpoint is
	// stored when it returns.
	s = graph.NewMemorySaver()
	seen = map[string][]int{}
	run := chain4(t, s, seen, &mu)
	out, err := run.Invoke(ctx, tState{}, graph.Thread("d"), graph.Durability(graph.DurabilityExit))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "d"}, out.Log)
	for _, name := range []string{"a", "b", "c", "d"} {
		assert.Empty(t, seen[name], "exit: %s sees nothing stored", name)
	}
	assert.Equal(t, []int{4}, stored(t, s, "d"), "exit: only the last checkpoint")
	snap, err := run.State(ctx, graph.Thread("d"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "d"}, snap.State.Log)
	assert.Empty(t, snap.Parent, "the first checkpoint of the thread")

	// A second exit run on the thread follows the checkpoint stored last.
	_, err = run.Invoke(ctx, tState{}, graph.Thread("d"), graph.Durability(graph.DurabilityExit))
	require.NoError(t, err)
	hist, err := run.History(ctx, graph.Thread("d"), 0)
	require.NoError(t, err)
	require.Len(t, hist, 2)
	assert.Equal(t, hist[1].CheckpointID, hist[0].Parent)

	// async: the graph's default (WithDurability); by the time a step runs,
	// the checkpoint of the step two before it is stored; everything is
	// stored when the run returns, as with sync.
	s = graph.NewMemorySaver()
	seen = map[string][]int{}
	_, err = chain4(t, s, seen, &mu, graph.WithDurability(graph.DurabilityAsync)).Invoke(ctx, tState{}, graph.Thread("d"))
	require.NoError(t, err)
	assert.Contains(t, seen["c"], 1, "async: c sees a's checkpoint at least")
	assert.Contains(t, seen["d"], 2)
	assert.Equal(t, []int{4, 3, 2, 1, 0}, stored(t, s, "d"))
}

// In async mode the next step runs while the last checkpoint is written: a
// store that holds the write of step 1 until step 2 has run does not stop
// the run (under sync it would wait forever).
func TestDurabilityAsyncWritesBehindTheNextStep(t *testing.T) {
	ranB := make(chan struct{})
	s := &watchedSaver{MemorySaver: graph.NewMemorySaver()}
	s.hold = func(cp *graph.Checkpoint) <-chan struct{} {
		if cp.Step == 1 {
			return ranB
		}
		return nil
	}
	g := newT()
	g.AddNode("a", logNode("a"))
	g.AddNode("b", func(context.Context, tState) (graph.Update[tState], error) {
		close(ranB)
		return graph.Writes(tLog.Add("b")), nil
	})
	g.AddSequence(graph.Start, "a", "b", graph.End)
	run := compile(t, g, graph.WithCheckpointer(s))
	out, err := run.Invoke(context.Background(), tState{}, graph.Thread("w"), graph.Durability(graph.DurabilityAsync))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, out.Log)
	assert.Equal(t, []int{2, 1, 0}, stored(t, s, "w"))
}

func TestDurabilityExitPausesAndFailuresAreStored(t *testing.T) {
	ctx := context.Background()
	var c calls
	s := &watchedSaver{MemorySaver: graph.NewMemorySaver()}
	sub := askingSubgraph(t, &c) // prep → {fast, ask} → after
	g := newT()
	g.AddNode("first", counted(&c, "first"))
	g.AddSubgraph("sub", sub)
	g.AddSequence(graph.Start, "first", "sub", graph.End)
	run := compile(t, g, graph.WithCheckpointer(s), graph.WithDurability(graph.DurabilityExit))

	_, err := run.Invoke(ctx, tState{}, graph.Thread("x"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	// One checkpoint of the thread (before sub's step, with sub's record),
	// and the same-state subgraph's line: its input (with prep's record)
	// and the one before its {fast, ask} step (with fast's).
	assert.Equal(t, int32(3), s.puts.Load(), "exit: Puts at the end only")
	assert.Equal(t, int32(0), s.writes.Load(), "exit: the task records go with the checkpoints")
	assert.Equal(t, []int{1}, stored(t, s, "x"))
	out, err := run.Resume(ctx, graph.Thread("x"), graph.Answer("ok"))
	require.NoError(t, err)
	assert.Equal(t, []string{"first", "prep", "fast", "after"}, out.Log)
	for name, want := range map[string]int{"first": 1, "prep": 1, "fast": 1, "ask": 2, "after": 1} {
		assert.Equal(t, want, c.get(name), "calls of %s", name)
	}

	// A failed run stores where it got to, with the failure: Resume runs
	// only the failed node.
	fails := true
	f := newT()
	f.AddNode("a", counted(&c, "fa"))
	f.AddNode("b", func(context.Context, tState) (graph.Update[tState], error) {
		if fails {
			return graph.Update[tState]{}, errors.New("boom")
		}
		return graph.Writes(tLog.Add("b")), nil
	})
	f.AddSequence(graph.Start, "a", "b", graph.End)
	frun := compile(t, f, graph.WithCheckpointer(s))
	_, err = frun.Invoke(ctx, tState{}, graph.Thread("f"), graph.Durability(graph.DurabilityExit))
	require.ErrorContains(t, err, "boom")
	snap, err := frun.State(ctx, graph.Thread("f"))
	require.NoError(t, err)
	require.Len(t, snap.Tasks, 1)
	assert.Contains(t, snap.Tasks[0].Err, "boom")
	fails = false
	out, err = frun.Resume(ctx, graph.Thread("f"), graph.Durability(graph.DurabilityExit))
	require.NoError(t, err)
	assert.Equal(t, []string{"fa", "b"}, out.Log)
	assert.Equal(t, 1, c.get("fa"))
}

// A write that fails is the run's error, in every mode — a pause that
// could not be stored included.
func TestDurabilityWriteFailuresFailTheRun(t *testing.T) {
	for _, mode := range []graph.DurabilityMode{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		t.Run(mode.String(), func(t *testing.T) {
			s := &watchedSaver{MemorySaver: graph.NewMemorySaver()}
			s.failPut = func(cp *graph.Checkpoint) error {
				if cp.Step >= 1 {
					return errors.New("disk full")
				}
				return nil
			}
			g := newT()
			g.AddNode("a", logNode("a"))
			g.AddNode("ask", func(ctx context.Context, _ tState) (graph.Update[tState], error) {
				_, err := graph.Interrupt[string](ctx, "?")
				return graph.Update[tState]{}, err
			})
			g.AddSequence(graph.Start, "a", "ask", graph.End)
			run := compile(t, g, graph.WithCheckpointer(s))
			_, err := run.Invoke(context.Background(), tState{}, graph.Thread("e"), graph.Durability(mode))
			require.ErrorContains(t, err, "disk full")
			assert.NotErrorIs(t, err, graph.ErrInterrupted, "the pause was not stored")
		})
	}
}

func TestDurabilityModeIsChecked(t *testing.T) {
	g := newT()
	g.AddNode("a", logNode("a"))
	g.AddSequence(graph.Start, "a", graph.End)
	run := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	_, err := run.Invoke(context.Background(), tState{}, graph.Thread("m"), graph.Durability(9))
	assert.ErrorContains(t, err, "DurabilityExit")
	assert.Equal(t, "DurabilityMode(9)", graph.DurabilityMode(9).String())
}
