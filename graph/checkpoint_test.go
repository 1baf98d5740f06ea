package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

func TestResumeRerunsOnlyUnfinishedTasks(t *testing.T) {
	// Three parallel tasks; "c" fails after "a" and "b" succeeded. Resuming
	// the thread runs "c" alone, then the join, with all three updates merged
	// in task order.
	var runs sync.Map // task → count
	var failC atomic.Bool
	failC.Store(true)
	var bothDone sync.WaitGroup
	bothDone.Add(2)
	g := newT()
	g.AddNode("split", logNode("split"))
	graph.AddTask(g, "work", func(ctx context.Context, item string) (graph.Update[tState], error) {
		n, _ := runs.LoadOrStore(item, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		if item == "c" {
			bothDone.Wait() // fail only after the others succeeded
			if failC.Load() {
				return graph.Update[tState]{}, errBoom
			}
		} else if failC.Load() {
			defer bothDone.Done()
		}
		return graph.Writes(tItems.Add(item)), nil
	})
	g.AddNode("join", logNode("join"))
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(tState) []string { return []string{"a", "b", "c"} })
	g.AddEdge("work", "join")
	g.AddEdge("join", graph.End)
	saver := graph.NewMemorySaver()
	c := compile(t, g, graph.WithCheckpointer(saver))
	ctx := context.Background()

	_, err := c.Invoke(ctx, tState{}, graph.Thread("t1"))
	require.ErrorIs(t, err, errBoom)

	snap, err := c.State(ctx, graph.Thread("t1"))
	require.NoError(t, err)
	assert.Equal(t, []string{"work"}, snap.Next, "a and b finished: only c is left")
	assert.Equal(t, []string{"a", "b"}, snap.State.Items, "with a's and b's writes")
	assert.Equal(t, 1, snap.Step)

	failC.Store(false)
	out, err := c.Resume(ctx, graph.Thread("t1"))
	require.NoError(t, err)
	count := func(item string) int32 {
		n, _ := runs.Load(item)
		return n.(*atomic.Int32).Load()
	}
	assert.Equal(t, int32(1), count("a"), "a ran again")
	assert.Equal(t, int32(1), count("b"), "b ran again")
	assert.Equal(t, int32(2), count("c"))
	assert.Equal(t, []string{"a", "b", "c"}, out.Items)
	assert.Equal(t, []string{"split", "join"}, out.Log)

	// The thread is finished now: resuming again returns its state.
	again, err := c.Resume(ctx, graph.Thread("t1"))
	require.NoError(t, err)
	assert.Equal(t, out, again)
	snap, err = c.State(ctx, graph.Thread("t1"))
	require.NoError(t, err)
	assert.Empty(t, snap.Next)
}

func TestResumeAfterAJoinRestoresItsProgress(t *testing.T) {
	// a → b → c, a → d, join [c, d] → e; c fails once. d has already been
	// seen by the join when c fails, so after the resume e runs once.
	var failed atomic.Bool
	g := newT()
	for _, n := range []string{"a", "b", "d", "e"} {
		g.AddNode(n, logNode(n))
	}
	g.AddNode("c", func(context.Context, tState) (graph.Update[tState], error) {
		if failed.CompareAndSwap(false, true) {
			return graph.Update[tState]{}, errBoom
		}
		return graph.Writes(tLog.Add("c")), nil
	})
	g.AddEdge(graph.Start, "a")
	g.AddSequence("a", "b", "c")
	g.AddEdge("a", "d")
	g.AddJoin([]string{"c", "d"}, "e")
	g.AddEdge("e", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	_, err := c.Invoke(context.Background(), tState{}, graph.Thread("j"))
	require.ErrorIs(t, err, errBoom)
	out, err := c.Resume(context.Background(), graph.Thread("j"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "d", "c", "e"}, out.Log)
}

func TestInvokeOnAFinishedThreadContinuesItsState(t *testing.T) {
	g := newT()
	g.AddNode("count", func(_ context.Context, s tState) (graph.Update[tState], error) {
		return graph.Writes(tN.Set(s.N+1), tLog.Add(fmt.Sprint("turn ", s.N+1))), nil
	})
	g.AddSequence(graph.Start, "count", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	ctx := context.Background()
	_, err := c.Invoke(ctx, tState{Items: []string{"q1"}}, graph.Thread("chat"))
	require.NoError(t, err)
	out, err := c.Invoke(ctx, tState{Items: []string{"q2"}}, graph.Thread("chat"))
	require.NoError(t, err)
	assert.Equal(t, 2, out.N)
	assert.Equal(t, []string{"turn 1", "turn 2"}, out.Log)
	assert.Equal(t, []string{"q1", "q2"}, out.Items, "list input is appended through the reducer")

	other, err := c.Invoke(ctx, tState{}, graph.Thread("other"))
	require.NoError(t, err)
	assert.Equal(t, 1, other.N, "threads are independent")
}

func TestCheckpointsStoreTypedJSON(t *testing.T) {
	saver := graph.NewMemorySaver()
	g := newT()
	g.AddNode("a", func(context.Context, tState) (graph.Update[tState], error) {
		return graph.Writes(tFlag.Set(false), tItems.Add("x")), nil
	})
	g.AddSequence(graph.Start, "a", graph.End)
	c := compile(t, g, graph.WithCheckpointer(saver))
	_, err := c.Invoke(context.Background(), tState{Flag: true}, graph.Thread("th"))
	require.NoError(t, err)
	cps, err := saver.List(context.Background(), graph.Thread("th"), 0)
	require.NoError(t, err)
	require.Len(t, cps, 2)
	assert.Equal(t, 1, cps[0].Step)
	assert.True(t, cps[0].Done())
	assert.Equal(t, cps[1].ID, cps[0].Parent)
	// Format 2: one channel per field; the step stored only the fields it
	// wrote, and names the input's version of the others.
	assert.Equal(t, graph.CheckpointFormat, cps[0].Format)
	assert.Empty(t, cps[0].State)
	values := map[string]string{}
	for _, cv := range cps[0].Values {
		values[cv.Channel] = string(cv.Value)
	}
	assert.Equal(t, map[string]string{"Log": "null", "N": "0", "Items": `["x"]`, "Flag": "false",
		graph.RestChannel: `{"Log":null,"N":0,"Items":null,"Flag":false}`}, values)
	for _, ch := range []string{"Log", "N", graph.RestChannel} {
		assert.Equal(t, cps[1].Versions[ch], cps[0].Versions[ch], "%s did not change", ch)
	}
	for _, ch := range []string{"Items", "Flag"} {
		assert.Equal(t, cps[0].ID, cps[0].Versions[ch], "%s was written in step 1", ch)
	}
	require.Len(t, cps[1].Next, 1)
	assert.Equal(t, "a", cps[1].Next[0].Node)
	assert.Len(t, cps[1].Next[0].ID, 36, "a task's ID is a UUID")

	first, err := saver.Get(context.Background(), graph.Thread("th").At(cps[1].ID))
	require.NoError(t, err)
	require.Len(t, first.Writes, 1)
	assert.JSONEq(t, `{"writes":[{"field":"Flag","op":"set","value":false},{"field":"Items","op":"add","value":["x"]}]}`, string(first.Writes[0].Update))

	_, err = saver.Get(context.Background(), graph.Thread("nope"))
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound)
	require.NoError(t, saver.DeleteThread(context.Background(), "th"))
	_, err = saver.Get(context.Background(), graph.Thread("th"))
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound)
}

// failingSaver fails PutWrites, to check that save errors are not dropped.
type failingSaver struct{ *graph.MemorySaver }

func (failingSaver) PutWrites(context.Context, graph.Ref, string, ...graph.TaskWrite) error {
	return errors.New("disk full")
}

func TestCheckpointErrorsFailTheRun(t *testing.T) {
	g := newT()
	g.AddNode("a", logNode("a"))
	g.AddSequence(graph.Start, "a", graph.End)
	c := compile(t, g, graph.WithCheckpointer(failingSaver{graph.NewMemorySaver()}))
	_, err := c.Invoke(context.Background(), tState{}, graph.Thread("x"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "disk full")
}

func TestThreadErrors(t *testing.T) {
	g := newT()
	g.AddNode("a", logNode("a"))
	g.AddSequence(graph.Start, "a", graph.End)
	c := compile(t, g)
	_, err := c.Invoke(context.Background(), tState{}, graph.Thread("x"))
	require.ErrorIs(t, err, graph.ErrNoCheckpointer)
	assert.Contains(t, err.Error(), "graph.WithCheckpointer")

	c = compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	_, err = c.Resume(context.Background(), graph.Thread("never"))
	require.ErrorIs(t, err, graph.ErrNothingToResume)
	_, err = c.Resume(context.Background())
	require.Error(t, err)
}

func TestResumeRefusesCheckpointsOfAnotherGraph(t *testing.T) {
	saver := graph.NewMemorySaver()
	state, _ := json.Marshal(tState{})
	require.NoError(t, saver.Put(context.Background(), &graph.Checkpoint{Thread: "t", ID: "1", State: state, Next: []graph.PendingTask{{Node: "ghost"}}}))
	g := newT()
	g.AddNode("a", logNode("a"))
	g.AddSequence(graph.Start, "a", graph.End)
	c := compile(t, g, graph.WithCheckpointer(saver))
	_, err := c.Resume(context.Background(), graph.Thread("t"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `node "ghost"`)
}

func TestResumeDecodesSendPayloadsIntoTheirTypes(t *testing.T) {
	type job struct {
		ID   int
		Name string
	}
	var got []job
	var mu sync.Mutex
	var fail atomic.Bool
	fail.Store(true)
	g := newT()
	g.AddNode("split", logNode("split"))
	graph.AddTask(g, "run", func(_ context.Context, j job) (graph.Update[tState], error) {
		if fail.Load() {
			return graph.Update[tState]{}, errBoom
		}
		mu.Lock()
		got = append(got, j)
		mu.Unlock()
		return graph.Update[tState]{}, nil
	})
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "run", func(tState) []job { return []job{{1, "one"}} })
	g.AddEdge("run", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	_, err := c.Invoke(context.Background(), tState{}, graph.Thread("p"))
	require.ErrorIs(t, err, errBoom)
	fail.Store(false)
	_, err = c.Resume(context.Background(), graph.Thread("p"))
	require.NoError(t, err)
	assert.Equal(t, []job{{1, "one"}}, got)
}
