package graph_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// History keeps every interrupt a task raised, with what it asked, when, in
// which task, and the answer it got — after the task finished too.
func TestHistoryKeepsAnsweredInterrupts(t *testing.T) {
	g := newT()
	g.AddNode("draft", logNode("draft"))
	g.AddNode("review", func(ctx context.Context, s tState) (graph.Update[tState], error) {
		title, err := graph.Interrupt[string](ctx, "title?")
		if err != nil {
			return graph.Update[tState]{}, err
		}
		ok, err := graph.Interrupt[bool](ctx, "publish "+title+"?")
		if err != nil {
			return graph.Update[tState]{}, err
		}
		return graph.Writes(tLog.Add(fmt.Sprintf("%s:%v", title, ok))), nil
	})
	g.AddSequence(graph.Start, "draft", "review", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	ctx := context.Background()
	_, err := c.Invoke(ctx, tState{}, graph.Thread("h"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	_, err = c.Resume(ctx, graph.Thread("h"), graph.Answer("Go"))
	require.ErrorIs(t, err, graph.ErrInterrupted, "the second question")
	paused, err := c.State(ctx, graph.Thread("h"))
	require.NoError(t, err)
	require.Len(t, paused.Tasks, 1)
	asked := paused.Tasks[0].Interrupts
	require.Len(t, asked, 2, "the answered question stays on the record")
	assert.False(t, asked[0].Pending())
	assert.True(t, asked[1].Pending())
	assert.Equal(t, paused.Interrupts, paused.Tasks[0].Waiting())
	out, err := c.Resume(ctx, graph.Thread("h"), graph.Answer(true))
	require.NoError(t, err)
	assert.Equal(t, []string{"draft", "Go:true"}, out.Log)

	hist, err := c.History(ctx, graph.Thread("h"), 0)
	require.NoError(t, err)
	require.Len(t, hist, 3, "input, after draft, after review")
	for i := 0; i+1 < len(hist); i++ {
		assert.Equal(t, hist[i+1].CheckpointID, hist[i].Parent, "each checkpoint names its parent")
	}
	review := hist[1]
	require.Len(t, review.Tasks, 1)
	task := review.Tasks[0]
	assert.Equal(t, "review", task.Node)
	assert.Len(t, task.ID, 36)
	assert.True(t, task.Done)
	assert.Equal(t, []string{"Go:true"}, must(tLog.Written(task.Update)))
	assert.Empty(t, review.Interrupts, "nothing waits there any more")
	require.Len(t, task.Interrupts, 2)
	for i, want := range []struct{ q, a string }{{`"title?"`, `"Go"`}, {`"publish Go?"`, `true`}} {
		ir := task.Interrupts[i]
		assert.JSONEq(t, want.q, string(ir.Payload), "what was asked")
		assert.JSONEq(t, want.a, string(ir.Answer), "what was answered")
		assert.Equal(t, "review", ir.Node)
		assert.Equal(t, 0, ir.Task)
		assert.Equal(t, 2, ir.Step)
		assert.False(t, ir.Time.IsZero(), "when it was asked")
		assert.False(t, ir.Answered.Before(ir.Time), "answered after it was asked")
	}
	assert.Equal(t, asked[0].ID, task.Interrupts[0].ID, "the same interrupt, from the pause to the end")
}

func must[T any](v T, ok bool) T {
	if !ok {
		panic("not written")
	}
	return v
}

// A task that failed has its error on the record, next to the updates of
// the tasks that finished, until a Resume runs it again.
func TestHistoryShowsTaskErrors(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	g := newT()
	g.AddNode("split", logNode("split"))
	graph.AddTask(g, "work", func(_ context.Context, item string) (graph.Update[tState], error) {
		if item == "b" && fail.Load() {
			return graph.Update[tState]{}, errors.New("b is broken")
		}
		return graph.Writes(tItems.Add(item)), nil
	})
	g.AddNode("join", logNode("join"))
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(tState) []string { return []string{"a", "b"} })
	g.AddEdge("work", "join")
	g.AddEdge("join", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()), graph.WithMaxConcurrency(1))
	ctx := context.Background()
	_, err := c.Invoke(ctx, tState{}, graph.Thread("e"))
	require.ErrorContains(t, err, "b is broken")
	hist, err := c.History(ctx, graph.Thread("e"), 1)
	require.NoError(t, err)
	require.Len(t, hist[0].Tasks, 2)
	a, b := hist[0].Tasks[0], hist[0].Tasks[1]
	assert.True(t, a.Done)
	assert.Equal(t, []string{"a"}, must(tItems.Written(a.Update)))
	assert.False(t, b.Done)
	assert.Contains(t, b.Err, "b is broken")
	assert.Contains(t, b.Err, `node "work" failed in step 2`)
	assert.Equal(t, "b", b.Arg)

	fail.Store(false)
	out, err := c.Resume(ctx, graph.Thread("e"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, out.Items)
	snap, err := c.State(ctx, graph.Thread("e").At(hist[0].CheckpointID))
	require.NoError(t, err)
	assert.Empty(t, snap.Tasks[1].Err, "the record of the task that finished on Resume replaces its failure")
	assert.True(t, snap.Tasks[1].Done)
}

// Any checkpoint of a thread can be forked from: the run goes on from there
// on a new branch whose first checkpoint names it as parent.
func TestForkFromAnyCheckpoint(t *testing.T) {
	var runs atomic.Int32
	g := newT()
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, func(context.Context, tState) (graph.Update[tState], error) {
			runs.Add(1)
			return graph.Writes(tLog.Add(n)), nil
		})
	}
	g.AddSequence(graph.Start, "a", "b", "c", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	ctx := context.Background()
	_, err := c.Invoke(ctx, tState{}, graph.Thread("f"))
	require.NoError(t, err)
	hist, err := c.History(ctx, graph.Thread("f"), 0)
	require.NoError(t, err)
	require.Len(t, hist, 4)
	for i, h := range hist {
		runs.Store(0)
		out, err := c.Resume(ctx, graph.Thread("f").At(h.CheckpointID))
		require.NoError(t, err, "fork from checkpoint %d (step %d)", i, h.Step)
		assert.Equal(t, []string{"a", "b", "c"}, out.Log, "from step %d", h.Step)
		assert.Equal(t, int32(3-h.Step), runs.Load(), "only the steps after step %d run", h.Step)
		if i == 0 {
			continue // the newest: a finished run has nothing to fork
		}
		newest, err := c.History(ctx, graph.Thread("f"), 0)
		require.NoError(t, err)
		var first graph.Snapshot[tState]
		for _, s := range newest {
			if s.Source == graph.SourceFork && s.Parent == h.CheckpointID {
				first = s
			}
		}
		require.NotEmpty(t, first.CheckpointID, "a fork checkpoint follows step %d's", h.Step)
		assert.Equal(t, h.Step, first.Step)
	}
	// The ids in History are what a fork needs, and what it refuses.
	_, err = c.Resume(ctx, graph.Thread("f").At("no-such"))
	require.ErrorIs(t, err, graph.ErrNothingToResume)
}
