package graph_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// calls counts node calls by name.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
}

func (c *calls) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// counted is a node that counts its calls and logs its name.
func counted(c *calls, name string) graph.NodeFunc[tState] {
	return func(context.Context, tState) (graph.Update[tState], error) {
		c.add(name)
		return graph.Writes(tLog.Add(name)), nil
	}
}

// askingSubgraph is prep → {fast, ask} → after: fast finishes in the step
// in which ask waits for an answer.
func askingSubgraph(t *testing.T, c *calls, opts ...graph.Option) *graph.Compiled[tState] {
	inner := newT()
	inner.AddNode("prep", counted(c, "prep"))
	inner.AddNode("fast", counted(c, "fast"))
	inner.AddNode("ask", func(ctx context.Context, s tState) (graph.Update[tState], error) {
		c.add("ask")
		ans, err := graph.Interrupt[string](ctx, "ok?")
		if err != nil {
			return graph.Update[tState]{}, err
		}
		return graph.Writes(tItems.Add("answer:" + ans)), nil
	})
	inner.AddNode("after", counted(c, "after"))
	inner.AddEdge(graph.Start, "prep")
	inner.AddEdge("prep", "fast")
	inner.AddEdge("prep", "ask")
	inner.AddJoin([]string{"fast", "ask"}, "after")
	inner.AddEdge("after", graph.End)
	return compile(t, inner, opts...)
}

func TestSubgraphResumeRunsOnlyTheInterruptedNode(t *testing.T) {
	ctx := context.Background()
	var c calls
	saver := graph.NewMemorySaver()
	// The subgraph compiled with the same store, to read its namespace.
	sub := askingSubgraph(t, &c, graph.WithCheckpointer(saver))
	g := newT()
	g.AddNode("first", counted(&c, "first"))
	g.AddSubgraph("sub", sub)
	g.AddNode("last", counted(&c, "last"))
	g.AddSequence(graph.Start, "first", "sub", "last", graph.End)
	run := compile(t, g, graph.WithCheckpointer(saver))

	_, err := run.Invoke(ctx, tState{}, graph.Thread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	assert.Equal(t, "sub/ask", ie.Interrupts[0].Node)

	// The parent's snapshot names the subgraph's namespace; the subgraph's
	// own state there shows where it stopped.
	snap, err := run.State(ctx, graph.Thread("t"))
	require.NoError(t, err)
	require.Len(t, snap.Tasks, 1)
	require.Len(t, snap.Tasks[0].Subgraphs, 1)
	ns := snap.Tasks[0].Subgraphs[0]
	assert.Equal(t, "sub:"+snap.Tasks[0].ID, ns)
	inner, err := sub.State(ctx, graph.Thread("t").In(ns))
	require.NoError(t, err)
	assert.Equal(t, ns, inner.Namespace)
	assert.Equal(t, []string{"ask"}, inner.Next, "fast finished; ask waits")
	assert.Equal(t, []string{"first", "prep", "fast"}, inner.State.Log, "the finished sibling's write shows in the current state")
	innerHist, err := sub.History(ctx, graph.Thread("t").In(ns), 0)
	require.NoError(t, err)
	assert.Len(t, innerHist, 2, "the subgraph's input and its first step")

	out, err := run.Resume(ctx, graph.Thread("t"), graph.Answer("yes"))
	require.NoError(t, err)
	assert.Equal(t, []string{"first", "prep", "fast", "after", "last"}, out.Log, "each inner write reaches the parent once")
	assert.Equal(t, []string{"answer:yes"}, out.Items)
	for name, want := range map[string]int{"first": 1, "prep": 1, "fast": 1, "ask": 2, "after": 1, "last": 1} {
		assert.Equal(t, want, c.get(name), "calls of %s", name)
	}
	inner, err = sub.State(ctx, graph.Thread("t").In(ns))
	require.NoError(t, err)
	assert.True(t, inner.Done())
}

func TestNestedSubgraphsResumeOnlyTheInterruptedNode(t *testing.T) {
	ctx := context.Background()
	var c calls
	innermost := askingSubgraph(t, &c)
	mid := newT()
	mid.AddNode("m1", counted(&c, "m1"))
	mid.AddSubgraph("deep", innermost)
	mid.AddSequence(graph.Start, "m1", "deep", graph.End)
	midc := compile(t, mid)
	g := newT()
	g.AddNode("first", counted(&c, "first"))
	// A mapped subgraph: the parent's update is made from its final state.
	graph.AddMappedSubgraph(g, "mid", midc, func(s tState) tState { return tState{} },
		func(s tState) graph.Update[tState] { return graph.Writes(tItems.Add(append(s.Log, s.Items...)...)) })
	g.AddSequence(graph.Start, "first", "mid", graph.End)
	saver := graph.NewMemorySaver()
	run := compile(t, g, graph.WithCheckpointer(saver))

	_, err := run.Invoke(ctx, tState{}, graph.Thread("n"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	assert.Equal(t, "mid/deep/ask", ie.Interrupts[0].Node)

	out, err := run.Resume(ctx, graph.Thread("n"), graph.Answer("yes"))
	require.NoError(t, err)
	assert.Equal(t, []string{"first"}, out.Log)
	assert.Equal(t, []string{"m1", "prep", "fast", "after", "answer:yes"}, out.Items)
	for name, want := range map[string]int{"first": 1, "m1": 1, "prep": 1, "fast": 1, "ask": 2, "after": 1} {
		assert.Equal(t, want, c.get(name), "calls of %s", name)
	}

	// The namespaces nest: mid's task, then deep's inside it.
	hist, err := run.History(ctx, graph.Thread("n"), 0)
	require.NoError(t, err)
	var midNS string
	for _, s := range hist {
		for _, ts := range s.Tasks {
			if ts.Node == "mid" && len(ts.Subgraphs) > 0 {
				midNS = ts.Subgraphs[0]
			}
		}
	}
	require.NotEmpty(t, midNS)
	midHist, err := saver.List(ctx, graph.Thread("n").In(midNS), 0)
	require.NoError(t, err)
	require.NotEmpty(t, midHist)
	var deepNS string
	for _, cp := range midHist {
		for _, w := range cp.Writes {
			if w.Node == "deep" && len(w.Subgraphs) > 0 {
				deepNS = w.Subgraphs[0]
			}
		}
	}
	assert.Regexp(t, `^mid:[0-9a-f-]{36}\|deep:[0-9a-f-]{36}$`, deepNS)
}

func TestSubgraphRetryContinuesWhereItFailed(t *testing.T) {
	ctx := context.Background()
	var c calls
	failures := 1
	inner := newT()
	inner.AddNode("prep", counted(&c, "prep"))
	inner.AddNode("flaky", func(context.Context, tState) (graph.Update[tState], error) {
		c.add("flaky")
		if c.get("flaky") <= failures {
			return graph.Update[tState]{}, errors.New("transient")
		}
		return graph.Writes(tLog.Add("flaky")), nil
	})
	inner.AddSequence(graph.Start, "prep", "flaky", graph.End)
	sub := compile(t, inner)
	g := newT()
	g.AddSubgraph("sub", sub, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2}))
	g.AddSequence(graph.Start, "sub", graph.End)
	run := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))

	out, err := run.Invoke(ctx, tState{}, graph.Thread("r"))
	require.NoError(t, err)
	assert.Equal(t, []string{"prep", "flaky"}, out.Log)
	assert.Equal(t, 1, c.get("prep"), "the retry continued the subgraph's checkpoint")
	assert.Equal(t, 2, c.get("flaky"))

	// Without retries, a Resume after the failure does the same.
	failures = 3
	run2 := compile(t, func() *graph.Graph[tState] {
		g := newT()
		g.AddSubgraph("sub", sub)
		g.AddSequence(graph.Start, "sub", graph.End)
		return g
	}(), graph.WithCheckpointer(graph.NewMemorySaver()))
	_, err = run2.Invoke(ctx, tState{}, graph.Thread("f"))
	require.ErrorContains(t, err, "transient")
	out, err = run2.Resume(ctx, graph.Thread("f"))
	require.NoError(t, err)
	assert.Equal(t, []string{"prep", "flaky"}, out.Log)
	assert.Equal(t, 2, c.get("prep"), "one call per thread")
	assert.Equal(t, 4, c.get("flaky"))
}

// A subgraph that a branch of the thread (a fork) runs again starts over:
// the fork's tasks are new tasks with namespaces of their own.
func TestSubgraphOfAForkStartsOver(t *testing.T) {
	ctx := context.Background()
	var c calls
	sub := askingSubgraph(t, &c)
	g := newT()
	g.AddSubgraph("sub", sub)
	g.AddSequence(graph.Start, "sub", graph.End)
	run := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	_, err := run.Invoke(ctx, tState{}, graph.Thread("k"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	snap, err := run.State(ctx, graph.Thread("k"))
	require.NoError(t, err)
	_, err = run.Resume(ctx, graph.Thread("k"), graph.Answer("one"))
	require.NoError(t, err)
	_, err = run.Resume(ctx, graph.Thread("k").At(snap.CheckpointID))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	assert.Equal(t, 2, c.get("prep"), "the fork's subgraph ran from its start")
}
