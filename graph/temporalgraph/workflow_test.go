package temporalgraph_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/internal/graphtest"
	"github.com/deepgraph/deepgraph/graph/temporalgraph"
)

// TestSameStateAsInProcess runs each of the shared shapes in-process
// (Invoke) and as a workflow in the SDK's test environment, on the same
// input: the workflow ends in the state Invoke ends in, each task runs as
// exactly one activity, and a failed run fails the workflow with the
// engine's error, final.
func TestSameStateAsInProcess(t *testing.T) {
	for _, sh := range graphtest.Shapes() {
		t.Run(sh.Name, func(t *testing.T) {
			t.Parallel()
			build := func() *graph.Compiled[graphtest.State] {
				c, err := sh.Build()
				require.NoError(t, err)
				return c
			}
			var opts []graph.RunOption
			if sh.RecursionLimit > 0 {
				opts = append(opts, graph.RecursionLimit(sh.RecursionLimit))
			}
			want, wantErr := build().Invoke(context.Background(), sh.In, opts...)
			require.NoError(t, sh.Check(want, wantErr))

			g := newGraph(t, "same", build(), temporalgraph.Options[graphtest.State]{})
			env := newEnv(t)
			g.Register(env)
			var activities atomic.Int32
			env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				if info.ActivityType.Name == g.ActivityName() {
					activities.Add(1)
				}
			})
			got, err := execute(t, env, g, temporalgraph.Input[graphtest.State]{State: sh.In, RecursionLimit: sh.RecursionLimit})
			assert.Equal(t, int32(sh.Tasks), activities.Load(), "each task runs as one activity")
			if wantErr == nil {
				require.NoError(t, err)
				assert.Equal(t, want, got, "the workflow ends in another state than Invoke")
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), wantErr.Error())
			var app *temporal.ApplicationError
			require.ErrorAs(t, err, &app)
			assert.Equal(t, "GraphError", app.Type())
			assert.True(t, app.NonRetryable(), "a graph's failure is final")
		})
	}
}

// The graph's own recursion limit (graph.WithRecursionLimit) holds in a
// workflow too; the shapes pass one with the run (Input.RecursionLimit).
func TestRecursionLimit(t *testing.T) {
	c, err := graphtest.Loop(graph.WithRecursionLimit(3))
	require.NoError(t, err)
	_, err = c.Invoke(context.Background(), graphtest.State{})
	require.ErrorIs(t, err, graph.ErrRecursionLimit)

	g := newGraph(t, "loop", c, temporalgraph.Options[graphtest.State]{})
	_, err = runOnTemporal(t, g, temporalgraph.Input[graphtest.State]{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "recursion limit of 3 steps")
	assert.Contains(t, err.Error(), "loop")
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, "GraphError", app.Type())
	assert.True(t, app.NonRetryable(), "a graph's failure is final")
	got, ok := temporalgraph.StateOf[graphtest.State](err)
	require.True(t, ok, "the error carries the state the run got to")
	assert.Equal(t, 3, got.N, "three steps ran")
	_, ok = temporalgraph.StateOf[graphtest.State](errors.New("another"))
	assert.False(t, ok)
}

// ownResult is what ownWorkflow returns: the state Run returned, and its
// error as text.
type ownResult struct {
	State graphtest.State `json:"state"`
	Err   string          `json:"error,omitempty"`
}

// Run inside a workflow of one's own: the workflow registered alone, the
// tasks with RegisterTasks. A failed step's finished tasks' writes are
// kept in the state Run returns.
func TestRunInOwnWorkflow(t *testing.T) {
	build := func(bad bool) *graph.Compiled[graphtest.State] {
		g := graphtest.New()
		g.AddNode("first", graphtest.LogNode("first"))
		g.AddNode("fine", graphtest.LogNode("fine"))
		g.AddNode("other", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) {
			if bad {
				return graph.Update[graphtest.State]{}, errBoom
			}
			return graph.Writes(graphtest.Log.Add("other")), nil
		})
		g.AddNode("last", graphtest.LogNode("last"))
		g.AddEdge(graph.Start, "first")
		g.AddEdge("first", "fine")
		g.AddEdge("first", "other")
		g.AddJoin([]string{"fine", "other"}, "last")
		g.AddEdge("last", graph.End)
		return tgCompile(t, g)
	}
	for _, tc := range []struct {
		name    string
		bad     bool
		wantLog []string
		wantErr string
	}{
		{name: "a run that succeeds", wantLog: []string{"first", "fine", "other", "last"}},
		{name: "a run that fails", bad: true, wantLog: []string{"first", "fine"}, wantErr: `node "other"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGraph(t, "own", build(tc.bad), temporalgraph.Options[graphtest.State]{})
			env := newEnv(t)
			env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in temporalgraph.Input[graphtest.State]) (ownResult, error) {
				s, err := g.Run(ctx, in)
				r := ownResult{State: s}
				if err != nil {
					r.Err = err.Error()
				}
				return r, nil
			}, workflow.RegisterOptions{Name: "mine"})
			g.RegisterTasks(env)
			env.ExecuteWorkflow("mine", temporalgraph.Input[graphtest.State]{})
			require.NoError(t, env.GetWorkflowError())
			var r ownResult
			require.NoError(t, env.GetWorkflowResult(&r))
			assert.Equal(t, tc.wantLog, r.State.Log)
			if tc.wantErr == "" {
				assert.Empty(t, r.Err)
			} else {
				assert.Contains(t, r.Err, tc.wantErr)
			}
		})
	}
}
