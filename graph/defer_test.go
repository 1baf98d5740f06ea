package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// unevenBranches is Start → {a → a2 → a3, b} with a3 and b leading to the
// deferred "sum": without Defer, sum would run after b in step 2 and again
// after a3.
func unevenBranches(c *calls, sumOpts ...graph.NodeOption) *graph.Graph[tState] {
	g := newT()
	for _, n := range []string{"a", "a2", "a3", "b"} {
		g.AddNode(n, counted(c, n))
	}
	g.AddNode("sum", func(_ context.Context, s tState) (graph.Update[tState], error) {
		c.add("sum")
		return graph.Writes(tN.Set(len(s.Log)), tLog.Add("sum")), nil
	}, sumOpts...)
	g.AddEdge(graph.Start, "a")
	g.AddEdge(graph.Start, "b")
	g.AddSequence("a", "a2", "a3", "sum", graph.End)
	g.AddEdge("b", "sum")
	return g
}

func TestDeferredNodeRunsLast(t *testing.T) {
	t.Run("without Defer", func(t *testing.T) {
		c := &calls{}
		out, err := compile(t, unevenBranches(c)).Invoke(context.Background(), tState{})
		require.NoError(t, err)
		assert.Equal(t, 2, c.get("sum"), "the shape this test relies on: sum runs once per branch without Defer")
		assert.Equal(t, []string{"a", "b", "a2", "sum", "a3", "sum"}, out.Log)
	})
	c := &calls{}
	out, err := compile(t, unevenBranches(c, graph.Defer())).Invoke(context.Background(), tState{})
	require.NoError(t, err)
	assert.Equal(t, 1, c.get("sum"))
	assert.Equal(t, []string{"a", "b", "a2", "a3", "sum"}, out.Log)
	assert.Equal(t, 4, out.N, "sum saw every branch's writes")
}

// A deferred node waiting across a pause is in the checkpoint
// (Checkpoint.Deferred) and runs after the Resume.
func TestDeferredNodeSurvivesAPause(t *testing.T) {
	c := &calls{}
	g := newT()
	g.AddNode("b", counted(c, "b"))
	g.AddNode("ask", func(ctx context.Context, _ tState) (graph.Update[tState], error) {
		ans, err := graph.Interrupt[string](ctx, "go on?")
		if err != nil {
			return graph.Update[tState]{}, err
		}
		return graph.Writes(tLog.Add("ask:" + ans)), nil
	})
	g.AddNode("a", counted(c, "a"))
	g.AddNode("sum", counted(c, "sum"), graph.Defer())
	g.AddEdge(graph.Start, "a")
	g.AddEdge(graph.Start, "b")
	g.AddSequence("a", "ask", "sum", graph.End)
	g.AddEdge("b", "sum")
	store := graph.NewMemorySaver()
	cg := compile(t, g, graph.WithCheckpointer(store))
	ctx := context.Background()
	_, err := cg.Invoke(ctx, tState{}, graph.Thread("t"))
	require.True(t, errors.Is(err, graph.ErrInterrupted), "%v", err)
	cp, err := store.Get(ctx, graph.Ref{Thread: "t"})
	require.NoError(t, err)
	assert.Equal(t, []string{"sum"}, cp.Deferred)
	snap, err := cg.State(ctx, graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, []string{"ask", "sum"}, snap.Next)

	// Another instance of the graph resumes from the store.
	out, err := compile(t, g, graph.WithCheckpointer(store)).Resume(ctx, graph.Thread("t"), graph.Answer("yes"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "ask:yes", "sum"}, out.Log)
	assert.Equal(t, 1, c.get("sum"))
	cp, err = store.Get(ctx, graph.Ref{Thread: "t"})
	require.NoError(t, err)
	assert.True(t, cp.Done())
}

func TestDeferRefusedOnTaskNode(t *testing.T) {
	g := newT()
	graph.AddTask(g, "work", func(context.Context, int) (graph.Update[tState], error) { return graph.Update[tState]{}, nil }, graph.Defer())
	g.AddNode("n", logNode("n"))
	g.AddSequence(graph.Start, "n", graph.End)
	g.AddEdge("work", graph.End)
	_, err := g.Compile()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `task node "work": graph.Defer applies to nodes on the state`)
}
