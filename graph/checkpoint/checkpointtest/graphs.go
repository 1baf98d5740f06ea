package checkpointtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// State is the state of the suite's graphs.
type State struct {
	Items []string `json:"items"`
	Log   []string `json:"log"`
	Note  string   `json:"note"`
}

var (
	fItems = graph.Append(func(s *State) *[]string { return &s.Items })
	fLog   = graph.Append(func(s *State) *[]string { return &s.Log })
	fNote  = graph.Value(func(s *State) *string { return &s.Note })
)

// counter counts the runs of each task.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

// fanOut is split → work ×items → join → End; work fails for items in fail.
func fanOut(store graph.Checkpointer, items []string, runs *counter, fail func(string) bool) (*graph.Compiled[State], error) {
	g := graph.New[State](fItems, fLog, fNote)
	g.AddNode("split", func(context.Context, State) (graph.Update[State], error) {
		return graph.Writes(fLog.Add("split")), nil
	})
	graph.AddTask(g, "work", func(_ context.Context, item string) (graph.Update[State], error) {
		runs.add(item)
		if fail(item) {
			return graph.Update[State]{}, fmt.Errorf("work on %s failed", item)
		}
		return graph.Writes(fItems.Add(item)), nil
	})
	g.AddNode("join", func(_ context.Context, s State) (graph.Update[State], error) {
		return graph.Writes(fLog.Add(fmt.Sprintf("join %d", len(s.Items)))), nil
	})
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(State) []string { return items })
	g.AddEdge("work", "join")
	g.AddEdge("join", graph.End)
	return g.Compile(graph.WithCheckpointer(store))
}

func testGraphResume(t *testing.T, s graph.Checkpointer) {
	items := []string{"a", "b", "c", "d", "e"}
	var runs counter
	var failing sync.Map
	failing.Store("c", true)
	g, err := fanOut(s, items, &runs, func(item string) bool { _, f := failing.Load(item); return f })
	require.NoError(t, err)
	_, err = g.Invoke(ctx(t), State{}, graph.Thread("resume"))
	require.ErrorContains(t, err, "work on c failed")

	failing.Delete("c")
	// A second instance of the graph, as in another process.
	g2, err := fanOut(s, items, &runs, func(string) bool { return false })
	require.NoError(t, err)
	out, err := g2.Resume(ctx(t), graph.Thread("resume"))
	require.NoError(t, err)
	assert.Equal(t, items, out.Items, "merged in task order")
	assert.Equal(t, []string{"split", "join 5"}, out.Log)
	assert.Equal(t, 2, runs.get("c"))
	// The tasks that finished before the failure could have been cancelled
	// by it; none that finished ran again.
	for _, it := range []string{"a", "b", "d", "e"} {
		assert.LessOrEqual(t, runs.get(it), 2, it)
	}
	snap, err := g2.State(ctx(t), graph.Thread("resume"))
	require.NoError(t, err)
	assert.True(t, snap.Done())
}

// approval is the interrupt payload and answer of testGraphInterrupt.
type approval struct {
	Draft    string `json:"draft"`
	Approved bool   `json:"approved"`
	Edit     string `json:"edit,omitempty"`
}

func reviewGraph(store graph.Checkpointer, calls *counter) (*graph.Compiled[State], error) {
	g := graph.New[State](fItems, fLog, fNote)
	g.AddNode("draft", func(context.Context, State) (graph.Update[State], error) {
		calls.add("draft")
		return graph.Writes(fNote.Set("first draft")), nil
	})
	g.AddNode("review", func(ctx context.Context, s State) (graph.Update[State], error) {
		calls.add("review")
		a, err := graph.Interrupt[approval](ctx, approval{Draft: s.Note})
		if err != nil {
			return graph.Update[State]{}, err
		}
		note := s.Note
		if a.Edit != "" {
			note = a.Edit
		}
		return graph.Writes(fNote.Set(note), fLog.Add(fmt.Sprintf("reviewed approved=%v", a.Approved))), nil
	})
	g.AddNode("publish", func(_ context.Context, s State) (graph.Update[State], error) {
		calls.add("publish")
		return graph.Writes(fLog.Add("published: " + s.Note)), nil
	})
	g.AddSequence(graph.Start, "draft", "review", "publish", graph.End)
	return g.Compile(graph.WithCheckpointer(store))
}

func testGraphInterrupt(t *testing.T, s graph.Checkpointer) {
	var calls counter
	g, err := reviewGraph(s, &calls)
	require.NoError(t, err)
	_, err = g.Invoke(ctx(t), State{}, graph.Thread("hitl"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	pi := ie.Interrupts[0]
	assert.Equal(t, "review", pi.Node)
	assert.Equal(t, graph.InterruptNode, pi.Kind)
	payload, err := graph.PayloadOf[approval](pi)
	require.NoError(t, err)
	assert.Equal(t, "first draft", payload.Draft)

	// Another instance reads the pending interrupt from the store and
	// answers it.
	g2, err := reviewGraph(s, &calls)
	require.NoError(t, err)
	snap, err := g2.State(ctx(t), graph.Thread("hitl"))
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1)
	assert.Equal(t, pi.ID, snap.Interrupts[0].ID, "interrupt ids are stable across instances")
	assert.Equal(t, []string{"review"}, snap.Next)

	out, err := g2.Resume(ctx(t), graph.Thread("hitl"), graph.AnswerFor(pi.ID, approval{Approved: true, Edit: "edited"}))
	require.NoError(t, err)
	assert.Equal(t, []string{"reviewed approved=true", "published: edited"}, out.Log)
	assert.Equal(t, 1, calls.get("draft"), "the node before the interrupt ran once")
	assert.Equal(t, 2, calls.get("review"), "the interrupted node ran again from its start")
	assert.Equal(t, 1, calls.get("publish"))
}

func testGraphTimeTravel(t *testing.T, s graph.Checkpointer) {
	var calls counter
	g, err := reviewGraph(s, &calls)
	require.NoError(t, err)
	_, err = g.Invoke(ctx(t), State{}, graph.Thread("tt"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	_, err = g.Resume(ctx(t), graph.Thread("tt"), graph.Answer(approval{Approved: true}))
	require.NoError(t, err)

	hist, err := g.History(ctx(t), graph.Thread("tt"), 0)
	require.NoError(t, err)
	require.Len(t, hist, 4, "input, after draft, after review, after publish")
	var steps []int
	for _, h := range hist {
		steps = append(steps, h.Step)
	}
	assert.Equal(t, []int{3, 2, 1, 0}, steps, "newest first")
	assert.Equal(t, graph.SourceInput, hist[3].Source)
	assert.Equal(t, []string{"draft"}, hist[2].Ran)
	afterDraft := hist[2]
	assert.Equal(t, []string{"review"}, afterDraft.Next)

	// Edit the draft at the checkpoint after "draft": a branch.
	snap, err := g.UpdateState(ctx(t), graph.Thread("tt").At(afterDraft.CheckpointID), graph.Writes(fNote.Set("second draft")))
	require.NoError(t, err)
	assert.Equal(t, graph.SourceFork, snap.Source)
	assert.Equal(t, afterDraft.CheckpointID, snap.Parent)
	assert.Equal(t, "second draft", snap.State.Note)
	require.Len(t, snap.Interrupts, 0, "the branch has not reached review yet")

	_, err = g.Resume(ctx(t), graph.Thread("tt"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	p, err := graph.PayloadOf[approval](ie.Interrupts[0])
	require.NoError(t, err)
	assert.Equal(t, "second draft", p.Draft)
	out, err := g.Resume(ctx(t), graph.Thread("tt"), graph.Answer(approval{Approved: false}))
	require.NoError(t, err)
	assert.Equal(t, []string{"reviewed approved=false", "published: second draft"}, out.Log)

	// The old branch is still there, and the thread's history has both.
	old, err := g.State(ctx(t), graph.Thread("tt").At(hist[0].CheckpointID))
	require.NoError(t, err)
	assert.Equal(t, []string{"reviewed approved=true", "published: first draft"}, old.State.Log)
	all, err := g.History(ctx(t), graph.Thread("tt"), 0)
	require.NoError(t, err)
	assert.Len(t, all, 7)
	assert.True(t, slices.ContainsFunc(all, func(h graph.Snapshot[State]) bool { return h.CheckpointID == hist[0].CheckpointID }))

	// Running from an older checkpoint forks too: from the input, with the
	// first branch intact.
	_, err = g.Resume(ctx(t), graph.Thread("tt").At(hist[3].CheckpointID))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	assert.Equal(t, 2, calls.get("draft"), "the fork ran draft again")
	_, err = g.Resume(ctx(t), graph.Thread("tt").At("no-such-checkpoint"))
	require.True(t, errors.Is(err, graph.ErrNothingToResume), "%v", err)
}

// History read from the store shows what each step asked and was answered,
// what its tasks wrote and where they failed.
func testGraphHistory(t *testing.T, s graph.Checkpointer) {
	var calls counter
	g, err := reviewGraph(s, &calls)
	require.NoError(t, err)
	_, err = g.Invoke(ctx(t), State{}, graph.Thread("audit"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	_, err = g.Resume(ctx(t), graph.Thread("audit"), graph.Answer(approval{Approved: true, Edit: "final"}))
	require.NoError(t, err)

	g2, err := reviewGraph(s, &calls) // another instance, as in another process
	require.NoError(t, err)
	hist, err := g2.History(ctx(t), graph.Thread("audit"), 0)
	require.NoError(t, err)
	require.Len(t, hist, 4)
	review := hist[2] // after draft: its step is the review's
	require.Len(t, review.Tasks, 1)
	task := review.Tasks[0]
	assert.Equal(t, "review", task.Node)
	assert.NotEmpty(t, task.ID)
	assert.True(t, task.Done)
	require.Len(t, task.Interrupts, 1)
	ir := task.Interrupts[0]
	asked, err := graph.PayloadOf[approval](ir.PendingInterrupt)
	require.NoError(t, err)
	assert.Equal(t, "first draft", asked.Draft)
	assert.JSONEq(t, `{"draft":"","approved":true,"edit":"final"}`, string(ir.Answer))
	assert.False(t, ir.Time.IsZero())
	assert.False(t, ir.Answered.IsZero())
	assert.Equal(t, hist[3].CheckpointID, review.Parent)

	page, err := g2.History(ctx(t), graph.Thread("audit").At(hist[1].CheckpointID), 0)
	require.NoError(t, err)
	require.Len(t, page, 2, "the checkpoints before the one given")
	assert.Equal(t, review.CheckpointID, page[0].CheckpointID)
}

// A paused thread edited from another instance keeps its interrupt; a
// Resume that answers it and updates the state (LangGraph's Command) is
// stored in one checkpoint.
func testGraphEditPausedThread(t *testing.T, s graph.Checkpointer) {
	var calls counter
	g, err := reviewGraph(s, &calls)
	require.NoError(t, err)
	_, err = g.Invoke(ctx(t), State{}, graph.Thread("edit"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)

	g2, err := reviewGraph(s, &calls)
	require.NoError(t, err)
	snap, err := g2.UpdateState(ctx(t), graph.Thread("edit"), graph.Writes(fNote.Set("edited draft")))
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1)
	assert.Equal(t, ie.Interrupts[0].ID, snap.Interrupts[0].ID)
	out, err := g2.Resume(ctx(t), graph.Thread("edit"), graph.Answer(approval{Approved: true}))
	require.NoError(t, err, "the edit kept the interrupt")
	assert.Equal(t, []string{"reviewed approved=true", "published: edited draft"}, out.Log)

	_, err = g.Invoke(ctx(t), State{}, graph.Thread("command"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	out, err = g2.Resume(ctx(t), graph.Thread("command"), graph.Answer(approval{Approved: true}),
		graph.WithUpdate(graph.Writes(fItems.Add("from the command"))))
	require.NoError(t, err)
	assert.Equal(t, []string{"from the command"}, out.Items)
	hist, err := g2.History(ctx(t), graph.Thread("command"), 0)
	require.NoError(t, err)
	require.Len(t, hist, 5, "input, draft, the command, review, publish")
	assert.Equal(t, graph.SourceUpdate, hist[2].Source)
	require.Len(t, hist[2].Tasks, 1)
	require.Len(t, hist[2].Tasks[0].Interrupts, 1)
	assert.NotEmpty(t, hist[2].Tasks[0].Interrupts[0].Answer, "stored with the update")
}
