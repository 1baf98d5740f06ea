package graph_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// sState has a Reduce field whose reducer is visible in its result: Tags is
// a sorted set, so input that skipped the reducer shows up unsorted.
type sState struct {
	Tags []string
	Flag bool
	Seen []string
}

func sortedUnion(cur, upd []string) []string {
	out := slices.Clone(cur)
	for _, u := range upd {
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

var (
	sTags = graph.Reduce(func(s *sState) *[]string { return &s.Tags }, sortedUnion)
	sFlag = graph.Value(func(s *sState) *bool { return &s.Flag })
	sSeen = graph.Append(func(s *sState) *[]string { return &s.Seen })
)

// sGraph is Start → look → End; look records what it saw.
func sGraph(t *testing.T, seen *[]sState, opts ...graph.Option) *graph.Compiled[sState] {
	t.Helper()
	g := graph.New[sState](sTags, sFlag, sSeen)
	g.AddNode("look", func(_ context.Context, s sState) (graph.Update[sState], error) {
		*seen = append(*seen, s)
		return graph.Update[sState]{}, nil
	})
	g.AddSequence(graph.Start, "look", graph.End)
	c, err := g.Compile(opts...)
	require.NoError(t, err)
	return c
}

func TestFreshAndContinuingInputGoThroughTheReducers(t *testing.T) {
	// LangGraph applies a run's input as writes from START, through the
	// reducers, whether the thread is new or not.
	var seen []sState
	c := sGraph(t, &seen, graph.WithCheckpointer(graph.NewMemorySaver()))
	ctx := context.Background()

	_, err := c.Invoke(ctx, sState{Tags: []string{"b", "a"}})
	require.NoError(t, err)
	_, err = c.Invoke(ctx, sState{Tags: []string{"b", "a"}}, graph.Thread("fresh"))
	require.NoError(t, err)
	_, err = c.Invoke(ctx, sState{Tags: []string{"d", "c"}}, graph.Thread("fresh"))
	require.NoError(t, err)
	require.Len(t, seen, 3)
	assert.Equal(t, []string{"a", "b"}, seen[0].Tags, "a run without a thread")
	assert.Equal(t, []string{"a", "b"}, seen[1].Tags, "the first run of a thread")
	assert.Equal(t, []string{"a", "b", "c", "d"}, seen[2].Tags, "a continuing thread")
}

func TestInputWritesCanSetZeroValues(t *testing.T) {
	var seen []sState
	c := sGraph(t, &seen, graph.WithCheckpointer(graph.NewMemorySaver()))
	ctx := context.Background()
	_, err := c.Invoke(ctx, sState{Flag: true, Seen: []string{"old"}}, graph.Thread("z"))
	require.NoError(t, err)

	// A zero field of the input struct is not a write: Flag stays true.
	out, err := c.Invoke(ctx, sState{Flag: false}, graph.Thread("z"))
	require.NoError(t, err)
	assert.True(t, out.Flag)

	// InputWrites says "I wrote this field", zero or not, through the
	// reducers; Set on a list field replaces it.
	out, err = c.Invoke(ctx, sState{Tags: []string{"x"}}, graph.Thread("z"), graph.InputWrites(sFlag.Set(false), sSeen.Set(nil), sSeen.Add("new")))
	require.NoError(t, err)
	assert.False(t, out.Flag)
	assert.Equal(t, []string{"new"}, out.Seen)
	assert.Equal(t, []string{"x"}, out.Tags)
	assert.False(t, seen[len(seen)-1].Flag, "the first node sees the input's writes")

	// Streams take them too, and so does a fresh run.
	for ev, err := range c.Stream(ctx, sState{}, graph.InputWrites(sFlag.Set(true))) {
		require.NoError(t, err)
		if ev.Kind == graph.EventEnd {
			assert.True(t, ev.State.Flag)
		}
	}

	// Writes of another state type, or on Resume, are refused by name.
	_, err = c.Invoke(ctx, sState{}, graph.InputWrites(tFlag.Set(true)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "graph_test.tState")
	_, err = c.Resume(ctx, graph.Thread("z"), graph.InputWrites(sFlag.Set(true)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "graph.WithUpdate")
}

// overwriteGraph runs "reset" (Items.Set) and "add" (Items.Add) in one
// step, their edges from Start declared in the given order.
func overwriteGraph(t *testing.T, order ...string) *graph.Compiled[tState] {
	g := newT()
	g.AddNode("reset", func(context.Context, tState) (graph.Update[tState], error) {
		return graph.Writes(tItems.Set([]string{"fresh"}), tItems.Add("by reset")), nil
	})
	g.AddNode("add", func(context.Context, tState) (graph.Update[tState], error) {
		return graph.Writes(tItems.Add("by add"), tLog.Add("add")), nil
	})
	for _, n := range order {
		g.AddEdge(graph.Start, n)
		g.AddEdge(n, graph.End)
	}
	return compile(t, g)
}

func TestASetWinsOverParallelWritesWhateverTheEdgeOrder(t *testing.T) {
	// LangGraph's Overwrite: within a step, the task that sets a field
	// decides its value; the other tasks' writes to it are dropped. The
	// setting task's own later writes still apply in its order.
	for _, order := range [][]string{{"reset", "add"}, {"add", "reset"}} {
		out, err := overwriteGraph(t, order...).Invoke(context.Background(), tState{Items: []string{"old"}})
		require.NoError(t, err)
		assert.Equal(t, []string{"fresh", "by reset"}, out.Items, "edges %v", order)
		assert.Equal(t, []string{"add"}, out.Log, "other fields are untouched")
	}
}

func TestStateAfterAFailureShowsTheFinishedTasksWrites(t *testing.T) {
	// a and b finish, c fails: the newest state of the thread has a's and
	// b's writes applied and only c left to run (LangGraph's get_state);
	// the checkpoint asked for by id is as stored.
	var bothDone sync.WaitGroup
	bothDone.Add(2)
	g := newT()
	g.AddNode("split", logNode("split"))
	graph.AddTask(g, "work", func(ctx context.Context, item string) (graph.Update[tState], error) {
		if item == "c" {
			bothDone.Wait()
			return graph.Update[tState]{}, errBoom
		}
		defer bothDone.Done()
		return graph.Writes(tItems.Add(item)), nil
	})
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(tState) []string { return []string{"a", "b", "c"} })
	g.AddEdge("work", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	ctx := context.Background()
	_, err := c.Invoke(ctx, tState{}, graph.Thread("f"))
	require.ErrorIs(t, err, errBoom)

	snap, err := c.State(ctx, graph.Thread("f"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, snap.State.Items)
	assert.Equal(t, []string{"split"}, snap.State.Log)
	assert.Equal(t, []string{"work"}, snap.Next)
	assert.False(t, snap.Done())
	require.Len(t, snap.Tasks, 3)
	assert.Equal(t, []bool{true, true, false}, []bool{snap.Tasks[0].Done, snap.Tasks[1].Done, snap.Tasks[2].Done})

	stored, err := c.State(ctx, graph.Thread("f").At(snap.CheckpointID))
	require.NoError(t, err)
	assert.Empty(t, stored.State.Items)
	assert.Equal(t, []string{"work", "work", "work"}, stored.Next)
}

func TestTheValuesStreamStartsWithTheInputState(t *testing.T) {
	// LangGraph's stream_mode="values" yields the state the run starts from
	// first: the input merged into the thread's state, or, on resume, the
	// stored state.
	var fail atomic.Bool
	g := newT()
	g.AddNode("a", func(context.Context, tState) (graph.Update[tState], error) {
		if fail.Load() {
			return graph.Update[tState]{}, errBoom
		}
		return graph.Writes(tLog.Add("a")), nil
	})
	g.AddSequence(graph.Start, "a", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	ctx := context.Background()
	values := func(events func(func(graph.Event[tState], error) bool)) []string {
		var out []string
		for ev, err := range events {
			if err != nil {
				out = append(out, "error")
				continue
			}
			out = append(out, fmt.Sprint(ev.Kind, " ", ev.Step, " ", ev.State.Items, " ", ev.State.Log))
		}
		return out
	}
	assert.Equal(t, []string{"step 0 [in] []", "step 1 [in] [a]"},
		values(c.Stream(ctx, tState{Items: []string{"in"}}, graph.Thread("v"), graph.Events(graph.EventStep))))
	assert.Equal(t, []string{"step 0 [in more] [a]", "step 1 [in more] [a a]", "end 1 [in more] [a a]"},
		values(c.Stream(ctx, tState{Items: []string{"more"}}, graph.Thread("v"), graph.Events(graph.EventStep, graph.EventEnd))))

	fail.Store(true)
	assert.Equal(t, []string{"step 0 [x] []", "error"}, values(c.Stream(ctx, tState{Items: []string{"x"}}, graph.Thread("r"), graph.Events(graph.EventStep))))
	fail.Store(false)
	assert.Equal(t, []string{"step 0 [x] []", "step 1 [x] [a]"}, values(c.ResumeStream(ctx, graph.Thread("r"), graph.Events(graph.EventStep))))
}

func TestWideFanOutsHaveADefaultBound(t *testing.T) {
	// Without WithMaxConcurrency, a step runs at most
	// DefaultMaxConcurrency tasks at once; a negative bound lifts it.
	const width = 200
	var inFlight, peak atomic.Int32
	g := newT()
	g.AddNode("split", logNode("split"))
	graph.AddTask(g, "work", func(context.Context, int) (graph.Update[tState], error) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		// Give the other tasks the chance to start (no assertion on time).
		deadline := time.Now().Add(20 * time.Millisecond)
		for peak.Load() <= int32(graph.DefaultMaxConcurrency) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Microsecond)
		}
		inFlight.Add(-1)
		return graph.Update[tState]{}, nil
	})
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(tState) []int { return make([]int, width) })
	g.AddEdge("work", graph.End)
	c := compile(t, g)
	_, err := c.Invoke(context.Background(), tState{})
	require.NoError(t, err)
	assert.Equal(t, int32(graph.DefaultMaxConcurrency), peak.Load())

	peak.Store(0)
	_, err = c.Invoke(context.Background(), tState{}, graph.MaxConcurrency(-1))
	require.NoError(t, err)
	assert.Greater(t, peak.Load(), int32(graph.DefaultMaxConcurrency), "a negative bound is no bound")
}
