package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// reviewT is draft → review (asks whether to publish) → publish, counting
// the runs of each node.
func reviewT(t *testing.T, n *runs, opts ...graph.Option) *graph.Compiled[tState] {
	g := newT()
	g.AddNode("draft", func(context.Context, tState) (graph.Update[tState], error) {
		n.add("draft")
		return graph.Writes(tItems.Add("draft")), nil
	})
	g.AddNode("review", func(ctx context.Context, s tState) (graph.Update[tState], error) {
		n.add("review")
		ok, err := graph.Interrupt[bool](ctx, s.Items)
		if err != nil {
			return graph.Update[tState]{}, err
		}
		if !ok {
			return graph.Writes(tLog.Add("rejected")), nil
		}
		return graph.Writes(tLog.Add("approved " + s.Items[len(s.Items)-1])), nil
	}, graph.Destinations("publish", "audit")) // audit: reached by an update's Goto
	g.AddNode("publish", func(context.Context, tState) (graph.Update[tState], error) {
		n.add("publish")
		return graph.Writes(tLog.Add("published")), nil
	})
	g.AddNode("audit", logNode("audit"))
	g.AddSequence(graph.Start, "draft", "review", "publish", graph.End)
	g.AddEdge("audit", graph.End)
	return compile(t, g, append([]graph.Option{graph.WithCheckpointer(graph.NewMemorySaver())}, opts...)...)
}

func pausedAt(t *testing.T, c *graph.Compiled[tState], thread string) graph.PendingInterrupt {
	t.Helper()
	_, err := c.Invoke(context.Background(), tState{}, graph.Thread(thread))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	return ie.Interrupts[0]
}

// An edit of a paused thread keeps its interrupt: the Resume that answers
// it goes on, and the node sees the edit.
func TestUpdateStateKeepsThePendingInterrupt(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []graph.UpdateOption
	}{
		{"without a node", nil},
		{"as the node before", []graph.UpdateOption{graph.AsNode("draft")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n runs
			c := reviewT(t, &n)
			pi := pausedAt(t, c, "k")
			snap, err := c.UpdateState(ctx, graph.Thread("k"), graph.Writes(tItems.Add("edited")), tc.opts...)
			require.NoError(t, err)
			require.Len(t, snap.Interrupts, 1, "the interrupt is still pending")
			assert.Equal(t, pi.ID, snap.Interrupts[0].ID, "under the same id")
			assert.Equal(t, []string{"review"}, snap.Next)
			out, err := c.Resume(ctx, graph.Thread("k"), graph.AnswerFor(pi.ID, true))
			require.NoError(t, err)
			assert.Equal(t, []string{"approved edited", "published"}, out.Log)
			assert.Equal(t, 1, n.get("draft"))
		})
	}
}

// An update as the interrupted node answers it: the run goes on after it.
func TestUpdateStateAsTheInterruptedNodeAnswersIt(t *testing.T) {
	var n runs
	c := reviewT(t, &n)
	ctx := context.Background()
	pausedAt(t, c, "a")
	snap, err := c.UpdateState(ctx, graph.Thread("a"), graph.Writes(tLog.Add("approved by hand")), graph.AsNode("review"))
	require.NoError(t, err)
	assert.Empty(t, snap.Interrupts)
	assert.Equal(t, []string{"publish"}, snap.Next)
	_, err = c.Resume(ctx, graph.Thread("a"), graph.Answer(true))
	require.ErrorIs(t, err, graph.ErrBadAnswer, "nothing waits for an answer any more")
	out, err := c.Resume(ctx, graph.Thread("a"))
	require.NoError(t, err)
	assert.Equal(t, []string{"approved by hand", "published"}, out.Log)
	assert.Equal(t, 1, n.get("review"))
}

// In a parallel step, an edit keeps the finished tasks' work and the
// waiting tasks' interrupts.
func TestUpdateStateKeepsTheStepsWork(t *testing.T) {
	var n runs
	c := askFanOut(t, graph.NewMemorySaver(), []string{"a", "b", "c"}, []string{"b", "c"}, &n)
	ctx := context.Background()
	_, err := c.Invoke(ctx, tState{}, graph.Thread("p"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 2)
	_, err = c.Resume(ctx, graph.Thread("p"), graph.AnswerFor(ie.Interrupts[0].ID, "B"))
	require.ErrorIs(t, err, graph.ErrInterrupted, "c still waits")
	snap, err := c.UpdateState(ctx, graph.Thread("p"), graph.Writes(tN.Set(7)))
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1)
	assert.Equal(t, ie.Interrupts[1].ID, snap.Interrupts[0].ID)
	out, err := c.Resume(ctx, graph.Thread("p"), graph.Answer("C"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b=B", "c=C"}, out.Items)
	assert.Equal(t, 7, out.N)
	assert.Equal(t, 1, n.get("a"), "the finished task did not run again")
	assert.Equal(t, 2, n.get("b"), "b ran when asked and when answered")
}

// Resume with an answer and an update (LangGraph's Command with resume,
// update and goto): one checkpoint, the node sees the update, the Goto's
// node runs in the resumed step.
func TestResumeWithUpdate(t *testing.T) {
	var n runs
	c := reviewT(t, &n)
	ctx := context.Background()
	pausedAt(t, c, "cmd")
	before, err := c.History(ctx, graph.Thread("cmd"), 0)
	require.NoError(t, err)
	out, err := c.Resume(ctx, graph.Thread("cmd"), graph.Answer(true),
		graph.WithUpdate(graph.Writes(tItems.Add("second draft")).Goto("audit")))
	require.NoError(t, err)
	assert.Equal(t, []string{"approved second draft", "audit", "published"}, out.Log)
	hist, err := c.History(ctx, graph.Thread("cmd"), 0)
	require.NoError(t, err)
	require.Len(t, hist, len(before)+3, "the update (with the answer), the resumed step, publish")
	upd := hist[2]
	assert.Equal(t, graph.SourceUpdate, upd.Source)
	assert.Equal(t, []string{"review", "audit"}, upd.Next)
	require.Len(t, upd.Tasks[0].Interrupts, 1)
	assert.JSONEq(t, "true", string(upd.Tasks[0].Interrupts[0].Answer), "the answer is stored with the update")

	// As the interrupted node, without an answer.
	pausedAt(t, c, "cmd2")
	out, err = c.Resume(ctx, graph.Thread("cmd2"), graph.WithUpdate(graph.Writes(tLog.Add("skipped review")), graph.AsNode("review")))
	require.NoError(t, err)
	assert.Equal(t, []string{"skipped review", "published"}, out.Log)

	type other struct{ X int }
	x := graph.Value(func(s *other) *int { return &s.X })
	_, err = c.Resume(ctx, graph.Thread("cmd2"), graph.WithUpdate(graph.Writes(x.Set(1))))
	assert.ErrorContains(t, err, "another state type")
	_, err = c.Invoke(ctx, tState{}, graph.Thread("cmd3"), graph.WithUpdate(graph.Writes(tN.Set(1))))
	assert.ErrorContains(t, err, "graph.InputWrites")
}
