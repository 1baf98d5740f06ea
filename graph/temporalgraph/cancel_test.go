package temporalgraph_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/internal/graphtest"
	"github.com/deepgraph/deepgraph/graph/temporalgraph"
)

// Cancelling the run reaches the node that runs (through its activity's
// heartbeat) and ends the workflow cancelled.
func TestCancellation(t *testing.T) {
	started := make(chan struct{})
	observed := make(chan error, 1)
	var afterRuns atomic.Int32
	g := graphtest.New()
	g.AddNode("first", graphtest.LogNode("first"))
	g.AddNode("long", func(ctx context.Context, _ graphtest.State) (graph.Update[graphtest.State], error) {
		close(started)
		select {
		case <-ctx.Done():
			observed <- ctx.Err()
			return graph.Update[graphtest.State]{}, ctx.Err()
		case <-time.After(time.Minute):
			observed <- nil
			return graph.Writes(graphtest.Log.Add("long")), nil
		}
	})
	g.AddNode("after", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) {
		afterRuns.Add(1)
		return graph.Writes(graphtest.Log.Add("after")), nil
	})
	g.AddSequence(graph.Start, "first", "long", "after", graph.End)
	tg := newGraph(t, "cancel", tgCompile(t, g), temporalgraph.Options[graphtest.State]{Heartbeat: 50 * time.Millisecond})

	env := newEnv(t)
	tg.Register(env)
	var running temporalgraph.Progress
	// With an activity running, the environment fires a callback after its
	// delay in wall time; this one cancels the run once long runs, and
	// looks again later until then.
	var cancelWhenLongRuns func()
	cancelWhenLongRuns = func() {
		select {
		case <-started:
			running = queryProgress(t, env, 0)
			env.CancelWorkflow()
		default:
			env.RegisterDelayedCallback(cancelWhenLongRuns, 20*time.Millisecond)
		}
	}
	env.RegisterDelayedCallback(cancelWhenLongRuns, 20*time.Millisecond)
	_, err := execute(t, env, tg, temporalgraph.Input[graphtest.State]{})
	require.Error(t, err)
	var canceled *temporal.CanceledError
	assert.ErrorAs(t, err, &canceled, "the workflow ends cancelled: %v", err)

	// The node tells whether its context was cancelled or it ran out its
	// minute.
	err = <-observed
	require.Error(t, err, "the node finished instead of seeing its context cancelled")
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []temporalgraph.TaskRef{{Step: 2, Node: "long", Task: 0}}, running.Running)
	assert.Zero(t, afterRuns.Load(), "nothing runs after the cancellation")
}
