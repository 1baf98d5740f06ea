package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// escalatingSubgraph is check → escalate → never: escalate sends a Command
// to the parent that writes N and routes to the parent's "human".
func escalatingSubgraph(t *testing.T, c *calls, opts ...graph.Option) *graph.Compiled[tState] {
	inner := newT()
	inner.AddNode("check", counted(c, "check"))
	inner.AddNode("escalate", func(context.Context, tState) (graph.Update[tState], error) {
		c.add("escalate")
		return graph.Update[tState]{}, graph.ToParent(graph.Writes(tN.Set(7), tLog.Add("escalated")).Goto("human"))
	})
	inner.AddNode("never", counted(c, "never"))
	inner.AddSequence(graph.Start, "check", "escalate", "never", graph.End)
	return compile(t, inner, opts...)
}

func TestToParentSameState(t *testing.T) {
	for _, name := range []string{"plain", "checkpointed"} {
		t.Run(name, func(t *testing.T) {
			var opts []graph.Option
			var run []graph.RunOption
			if name == "checkpointed" {
				opts = append(opts, graph.WithCheckpointer(graph.NewMemorySaver()))
				run = append(run, graph.Thread("t"))
			}
			c := &calls{}
			g := newT()
			g.AddSubgraph("review", escalatingSubgraph(t, c, opts...), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3}), graph.Destinations("human", graph.End))
			g.AddNode("human", counted(c, "human"))
			g.AddEdge(graph.Start, "review")
			g.AddEdge("human", graph.End)
			out, err := compile(t, g, opts...).Invoke(context.Background(), tState{}, run...)
			require.NoError(t, err)
			assert.Equal(t, 7, out.N)
			// The Command's writes replace the subgraph's: check's log entry
			// is not handed to the parent.
			assert.Equal(t, []string{"escalated", "human"}, out.Log)
			assert.Equal(t, 1, c.get("check"))
			assert.Equal(t, 1, c.get("escalate"), "a Command to the parent is not a failure to retry")
			assert.Equal(t, 0, c.get("never"))
			assert.Equal(t, 1, c.get("human"))
		})
	}
}

func TestToParentMappedSubgraph(t *testing.T) {
	type inner struct{ Q string }
	q := graph.Value(func(s *inner) *string { return &s.Q })
	ig := graph.New[inner](q)
	ig.AddNode("route", func(_ context.Context, s inner) (graph.Update[inner], error) {
		return graph.Update[inner]{}, graph.ToParent(graph.Writes(tItems.Add("from inner: " + s.Q)).Goto("b"))
	})
	ig.AddSequence(graph.Start, "route", graph.End)
	sub, err := ig.Compile()
	require.NoError(t, err)

	g := newT()
	graph.AddMappedSubgraph(g, "sub", sub,
		func(s tState) inner { return inner{Q: "q1"} },
		func(inner) graph.Update[tState] { return graph.Writes(tItems.Add("finished")) },
		graph.Destinations("a", "b"))
	g.AddNode("a", logNode("a"))
	g.AddNode("b", logNode("b"))
	g.AddEdge(graph.Start, "sub")
	g.AddEdge("a", graph.End)
	g.AddEdge("b", graph.End)
	out, err := compile(t, g).Invoke(context.Background(), tState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"from inner: q1"}, out.Items)
	assert.Equal(t, []string{"b"}, out.Log)
}

// A node that calls Invoke on a subgraph itself gets the Command as its
// update too.
func TestToParentThroughInvokeInANode(t *testing.T) {
	c := &calls{}
	sub := escalatingSubgraph(t, c)
	g := newT()
	g.AddNode("wrap", func(ctx context.Context, s tState) (graph.Update[tState], error) {
		_, err := sub.Invoke(ctx, s)
		return graph.Update[tState]{}, err
	}, graph.Destinations("human"))
	g.AddNode("human", counted(c, "human"))
	g.AddEdge(graph.Start, "wrap")
	g.AddEdge("human", graph.End)
	out, err := compile(t, g).Invoke(context.Background(), tState{})
	require.NoError(t, err)
	assert.Equal(t, 7, out.N)
	assert.Equal(t, 1, c.get("human"))
}

func TestToParentRefused(t *testing.T) {
	t.Run("top-level graph", func(t *testing.T) {
		g := newT()
		g.AddNode("n", func(context.Context, tState) (graph.Update[tState], error) {
			return graph.Update[tState]{}, graph.ToParent(graph.Writes(tN.Set(1)))
		})
		g.AddSequence(graph.Start, "n", graph.End)
		_, err := compile(t, g).Invoke(context.Background(), tState{})
		var pc *graph.ParentCommand
		require.ErrorAs(t, err, &pc)
		assert.Contains(t, err.Error(), `node "n" returned a Command to the parent graph`)
		assert.Contains(t, err.Error(), "not as a subgraph")
	})
	t.Run("another state type", func(t *testing.T) {
		type other struct{ X int }
		inner := newT()
		inner.AddNode("n", func(context.Context, tState) (graph.Update[tState], error) {
			return graph.Update[tState]{}, graph.ToParent(graph.Update[other]{})
		})
		inner.AddSequence(graph.Start, "n", graph.End)
		g := newT()
		g.AddSubgraph("sub", compile(t, inner))
		g.AddSequence(graph.Start, "sub", graph.End)
		_, err := compile(t, g).Invoke(context.Background(), tState{})
		require.Error(t, err)
		var ne *graph.NodeError
		require.ErrorAs(t, err, &ne)
		assert.Equal(t, "sub", ne.Node)
		assert.Contains(t, err.Error(), `node "n" of its subgraph returned a Command to the parent graph over graph.Update[`)
		assert.Contains(t, err.Error(), "other")
	})
	t.Run("undeclared destination", func(t *testing.T) {
		c := &calls{}
		g := newT()
		g.AddSubgraph("review", escalatingSubgraph(t, c), graph.Destinations("elsewhere"))
		g.AddNode("human", counted(c, "human"))
		g.AddNode("elsewhere", counted(c, "elsewhere"))
		g.AddEdge(graph.Start, "review")
		g.AddEdge("elsewhere", "human")
		g.AddEdge("human", graph.End)
		_, err := compile(t, g).Invoke(context.Background(), tState{})
		var re *graph.RouteError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, "human", re.To)
	})
}

// RunTask, the other side of a TaskRunner (graph/temporalgraph), hands
// back the Command as the task's update.
func TestToParentRunTask(t *testing.T) {
	c := &calls{}
	g := newT()
	g.AddSubgraph("review", escalatingSubgraph(t, c), graph.Destinations("human"))
	g.AddNode("human", counted(c, "human"))
	g.AddEdge(graph.Start, "review")
	g.AddEdge("human", graph.End)
	cg := compile(t, g)
	state, err := json.Marshal(tState{})
	require.NoError(t, err)
	out, err := cg.RunTask(context.Background(), graph.TaskInput{Step: 1, State: state, Task: graph.RemoteTask{Node: "review"}, Attempt: 1}, nil)
	require.NoError(t, err)
	var u struct {
		Goto []string `json:"goto"`
	}
	require.NoError(t, json.Unmarshal(out.Update, &u))
	assert.Equal(t, []string{"human"}, u.Goto)
	merged, err := cg.MergeUpdates(tState{}, out.Update)
	require.NoError(t, err)
	assert.Equal(t, 7, merged.N)

	// A node of the top-level graph returning one fails without a retry.
	g2 := newT()
	g2.AddNode("n", func(context.Context, tState) (graph.Update[tState], error) {
		return graph.Update[tState]{}, graph.ToParent(graph.Writes(tN.Set(1)))
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3}))
	g2.AddSequence(graph.Start, "n", graph.End)
	out, err = compile(t, g2).RunTask(context.Background(), graph.TaskInput{Step: 1, State: state, Task: graph.RemoteTask{Node: "n"}, Attempt: 1}, nil)
	require.Error(t, err)
	assert.False(t, out.Retry)
	assert.True(t, errors.As(err, new(*graph.ParentCommand)))
}
