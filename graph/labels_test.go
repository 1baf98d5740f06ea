package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

func sources(t *testing.T, c *graph.Compiled[tState], thread string) []graph.CheckpointSource {
	t.Helper()
	hist, err := c.History(context.Background(), graph.Thread(thread), 0)
	require.NoError(t, err)
	var out []graph.CheckpointSource
	for i := len(hist) - 1; i >= 0; i-- {
		out = append(out, hist[i].Source)
	}
	return out
}

// Each checkpoint says what wrote it: a run's input, a step, an update, a
// fork — also the first step after a Resume.
func TestCheckpointSources(t *testing.T) {
	g := newT()
	g.AddNode("a", logNode("a"))
	g.AddNode("b", logNode("b"))
	g.AddSequence(graph.Start, "a", "b", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()), graph.WithInterruptBefore("b"))
	ctx := context.Background()
	_, err := c.Invoke(ctx, tState{}, graph.Thread("s"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	_, err = c.Resume(ctx, graph.Thread("s"))
	require.NoError(t, err)
	assert.Equal(t, []graph.CheckpointSource{graph.SourceInput, graph.SourceLoop, graph.SourceLoop}, sources(t, c, "s"),
		"the step after a Resume is a loop checkpoint")

	hist, err := c.History(ctx, graph.Thread("s"), 0)
	require.NoError(t, err)
	_, err = c.UpdateState(ctx, graph.Thread("s"), graph.Writes(tN.Set(1)))
	require.NoError(t, err)
	_, err = c.UpdateState(ctx, graph.Thread("s").At(hist[1].CheckpointID), graph.Writes(tN.Set(2)))
	require.NoError(t, err)
	_, err = c.Resume(ctx, graph.Thread("s").At(hist[2].CheckpointID))
	require.ErrorIs(t, err, graph.ErrInterrupted, "the fork from the input pauses before b again")
	assert.Equal(t, []graph.CheckpointSource{graph.SourceInput, graph.SourceLoop, graph.SourceLoop, graph.SourceUpdate, graph.SourceFork,
		graph.SourceFork, graph.SourceLoop}, sources(t, c, "s"))
}

// "*" (AllNodes) stands for every node, in the graph's breakpoints and in a
// run's own; a run's own replace the graph's.
func TestBreakpointsOnAllNodes(t *testing.T) {
	g := newT()
	g.AddNode("a", logNode("a"))
	g.AddNode("b", logNode("b"))
	g.AddSequence(graph.Start, "a", "b", graph.End)
	ctx := context.Background()

	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()), graph.WithInterruptBefore(graph.AllNodes))
	var paused []string
	_, err := c.Invoke(ctx, tState{}, graph.Thread("all"))
	for {
		var ie *graph.InterruptError
		if !assert.ErrorAs(t, err, &ie) {
			break
		}
		paused = append(paused, ie.Interrupts[0].Node)
		if len(paused) == 2 {
			break
		}
		_, err = c.Resume(ctx, graph.Thread("all"))
	}
	assert.Equal(t, []string{"a", "b"}, paused)
	out, err := c.Resume(ctx, graph.Thread("all"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, out.Log)

	// A run's own breakpoints: after every node, in place of the graph's.
	_, err = c.Invoke(ctx, tState{}, graph.Thread("after"), graph.PauseAfter(graph.AllNodes))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, graph.InterruptAfter, ie.Interrupts[0].Kind)
	assert.Equal(t, "a", ie.Interrupts[0].Node)
	// None at all.
	out, err = c.Invoke(ctx, tState{}, graph.Thread("none"), graph.PauseBefore())
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, out.Log)

	_, err = c.Invoke(ctx, tState{}, graph.Thread("x"), graph.PauseBefore("nope"))
	assert.ErrorContains(t, err, `"nope"`)
	plain := compile(t, newSeq("a"))
	_, err = plain.Invoke(ctx, tState{}, graph.PauseAfter("a"))
	assert.ErrorContains(t, err, "needs graph.Thread")
}

func newSeq(names ...string) *graph.Graph[tState] {
	g := newT()
	for _, n := range names {
		g.AddNode(n, logNode(n))
	}
	g.AddSequence(append(append([]string{graph.Start}, names...), graph.End)...)
	return g
}

// DecodeWrites writes every key it is given, zero values included, through
// the fields' reducers.
func TestDecodeWrites(t *testing.T) {
	g := newT()
	g.AddNode("a", func(_ context.Context, s tState) (graph.Update[tState], error) {
		return graph.Writes(tFlag.Set(true), tN.Set(s.N+10)), nil
	})
	g.AddSequence(graph.Start, "a", graph.End)
	c := compile(t, g, graph.WithCheckpointer(graph.NewMemorySaver()))
	ctx := context.Background()
	out, err := c.Invoke(ctx, tState{Items: []string{"x"}}, graph.Thread("d"))
	require.NoError(t, err)
	require.True(t, out.Flag)

	ws, err := c.DecodeWrites([]byte(`{"Flag": false, "N": 0, "Items": ["y"]}`))
	require.NoError(t, err)
	require.Len(t, ws, 3)
	st, err := c.State(ctx, graph.Thread("d"))
	require.NoError(t, err)
	require.Equal(t, 10, st.State.N)
	out, err = c.Invoke(ctx, tState{}, graph.Thread("d"), graph.InputWrites(ws...))
	require.NoError(t, err)
	assert.Equal(t, 10, out.N, "N was written as 0 before the node added 10")
	assert.Equal(t, []string{"x", "y"}, out.Items, "an Append field's input is appended")

	for _, bad := range []struct{ in, want string }{
		{`{"Nope": 1}`, `"Nope" is not a declared field`},
		{`{"N": "one"}`, `field "N"`},
		{`[1]`, "JSON object"},
		{`{"N": 1} {}`, "trailing data"},
	} {
		_, err := c.DecodeWrites([]byte(bad.in))
		assert.ErrorContains(t, err, bad.want, bad.in)
	}
}
