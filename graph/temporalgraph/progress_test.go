package temporalgraph_test

import (
	"context"
	"errors"
	"fmt"
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

// progressGraph is a → slow → b: a emits "hello"; slow fails its first
// attempt and is retried a minute later (on the test environment's clock),
// long enough to query the run in the middle.
func progressGraph(t *testing.T) *graph.Compiled[graphtest.State] {
	var slowRuns atomic.Int32
	g := graphtest.New()
	g.AddNode("a", func(ctx context.Context, _ graphtest.State) (graph.Update[graphtest.State], error) {
		graph.Emit(ctx, "hello")
		return graph.Writes(graphtest.Log.Add("a")), nil
	})
	g.AddNode("slow", func(ctx context.Context, _ graphtest.State) (graph.Update[graphtest.State], error) {
		if slowRuns.Add(1) == 1 {
			return graph.Update[graphtest.State]{}, errBoom
		}
		return graph.Writes(graphtest.Log.Add("slow")), nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Minute}))
	g.AddNode("b", graphtest.LogNode("b"))
	g.AddSequence(graph.Start, "a", "slow", "b", graph.End)
	return tgCompile(t, g)
}

// describe is an Options.Progress that describes every event as a string.
func describe(ev graph.Event[graphtest.State]) (any, bool) {
	switch ev.Kind {
	case graph.EventCustom:
		return fmt.Sprintf("%s says %v", ev.Node, ev.Value), true
	case graph.EventTaskEnd:
		return fmt.Sprintf("%s wrote %v", ev.Node, ev.Update.Fields()), true
	default:
		return fmt.Sprintf("%s %s", ev.Kind, ev.Node), true
	}
}

// line is an entry as the tests compare it.
func line(t *testing.T, e temporalgraph.Entry) string {
	s := fmt.Sprintf("%d %d %s %d %s", e.Seq, e.Step, e.Node, e.Task, e.Kind)
	if len(e.Value) > 0 {
		v, err := temporalgraph.Decode[string](e)
		require.NoError(t, err)
		s += ": " + v
	}
	if e.Err != "" {
		s += " error " + e.Err
	}
	return s
}

func lines(t *testing.T, es []temporalgraph.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, line(t, e))
	}
	return out
}

func TestProgress(t *testing.T) {
	t.Run("with Options.Progress", func(t *testing.T) {
		t.Parallel()
		g := newGraph(t, "progress", progressGraph(t), temporalgraph.Options[graphtest.State]{Progress: describe})
		env := newEnv(t)
		g.Register(env)
		var mid temporalgraph.Progress
		var fromMid temporalgraph.Progress
		env.RegisterDelayedCallback(func() {
			mid = queryProgress(t, env, 0)
			fromMid = queryProgress(t, env, mid.Next)
		}, 30*time.Second)
		out, err := execute(t, env, g, temporalgraph.Input[graphtest.State]{})
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "slow", "b"}, out.Log)

		// In the middle: step 2 runs slow, waiting to retry it.
		assert.Equal(t, 2, mid.Step)
		assert.Equal(t, []temporalgraph.TaskRef{{Step: 2, Node: "slow", Task: 0}}, mid.Running)
		assert.False(t, mid.Done)
		assert.Equal(t, []string{
			"0 1 a 0 task_start: task_start a",
			"1 1 a 0 custom: a says hello",
			"2 1 a 0 task_end: a wrote [Log]",
			"3 2 slow 0 task_start: task_start slow",
		}, lines(t, mid.Entries))
		assert.Equal(t, 4, mid.Next)
		assert.Empty(t, fromMid.Entries, "nothing new since Next")
		assert.Equal(t, mid.Next, fromMid.Next)

		// At the end, from Next: only the new entries.
		end := queryProgress(t, env, mid.Next)
		assert.True(t, end.Done)
		assert.Empty(t, end.Err)
		assert.Empty(t, end.Running)
		assert.Equal(t, 3, end.Step)
		assert.Equal(t, []string{
			"4 2 slow 0 task_end: slow wrote [Log]",
			"5 3 b 0 task_start: task_start b",
			"6 3 b 0 task_end: b wrote [Log]",
		}, lines(t, end.Entries))
		assert.Equal(t, 7, end.Next)
		all := queryProgress(t, env, 0)
		assert.Len(t, all.Entries, 7)
		assert.Equal(t, mid.Entries, all.Entries[:4], "what was said stays said")
		for _, from := range []int{7, 100, -1} {
			p := queryProgress(t, env, from)
			assert.Empty(t, p.Entries, "from %d", from)
			assert.Equal(t, 7, p.Next, "from %d", from)
		}
	})
	t.Run("without Options.Progress", func(t *testing.T) {
		t.Parallel()
		g := newGraph(t, "progress", progressGraph(t), temporalgraph.Options[graphtest.State]{})
		env := newEnv(t)
		g.Register(env)
		_, err := execute(t, env, g, temporalgraph.Input[graphtest.State]{})
		require.NoError(t, err)
		p := queryProgress(t, env, 0)
		assert.True(t, p.Done)
		assert.Equal(t, []string{
			"0 1 a 0 task_start",
			"1 1 a 0 task_end",
			"2 2 slow 0 task_start",
			"3 2 slow 0 task_end",
			"4 3 b 0 task_start",
			"5 3 b 0 task_end",
		}, lines(t, p.Entries), "task starts and ends, no custom events")
		_, err = temporalgraph.Decode[string](p.Entries[0])
		assert.Error(t, err, "an entry without a value does not decode")
	})
	t.Run("Progress skips events", func(t *testing.T) {
		t.Parallel()
		g := newGraph(t, "progress", progressGraph(t), temporalgraph.Options[graphtest.State]{
			Progress: func(ev graph.Event[graphtest.State]) (any, bool) {
				if ev.Kind != graph.EventCustom {
					return nil, false
				}
				return ev.Value, true
			},
		})
		env := newEnv(t)
		g.Register(env)
		_, err := execute(t, env, g, temporalgraph.Input[graphtest.State]{})
		require.NoError(t, err)
		p := queryProgress(t, env, 0)
		assert.Equal(t, []string{
			"0 1 a 0 task_start",
			"1 1 a 0 custom: hello",
			"2 1 a 0 task_end",
			"3 2 slow 0 task_start",
			"4 2 slow 0 task_end",
			"5 3 b 0 task_start",
			"6 3 b 0 task_end",
		}, lines(t, p.Entries))
	})
	t.Run("a failed run", func(t *testing.T) {
		t.Parallel()
		gr := graphtest.New()
		gr.AddNode("bad", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) {
			return graph.Update[graphtest.State]{}, errBoom
		})
		gr.AddSequence(graph.Start, "bad", graph.End)
		g := newGraph(t, "progress", tgCompile(t, gr), temporalgraph.Options[graphtest.State]{})
		env := newEnv(t)
		g.Register(env)
		_, err := execute(t, env, g, temporalgraph.Input[graphtest.State]{})
		require.Error(t, err)
		var app *temporal.ApplicationError
		require.True(t, errors.As(err, &app))
		p := queryProgress(t, env, 0)
		assert.True(t, p.Done)
		assert.Contains(t, p.Err, `node "bad"`)
		assert.Contains(t, p.Err, "boom")
		assert.Equal(t, []string{"0 1 bad 0 task_start", `1 1 bad 0 task_end error graph: node "bad" failed in step 1: boom`}, lines(t, p.Entries),
			"a failed task's end is in the timeline, with its error")
	})
}
