package checkpointtest

import (
	"context"

	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// askingSubgraph is prep → {fast, ask} → after; ask waits for an answer.
func askingSubgraph(store graph.Checkpointer, calls *counter) (*graph.Compiled[State], error) {
	g := graph.New[State](fItems, fLog, fNote)
	for _, name := range []string{"prep", "fast", "after"} {
		g.AddNode(name, func(context.Context, State) (graph.Update[State], error) {
			calls.add(name)
			return graph.Writes(fLog.Add(name)), nil
		})
	}
	g.AddNode("ask", func(ctx context.Context, _ State) (graph.Update[State], error) {
		calls.add("ask")
		ans, err := graph.Interrupt[string](ctx, "ok?")
		if err != nil {
			return graph.Update[State]{}, err
		}
		return graph.Writes(fItems.Add(ans)), nil
	})
	g.AddEdge(graph.Start, "prep")
	g.AddEdge("prep", "fast")
	g.AddEdge("prep", "ask")
	g.AddJoin([]string{"fast", "ask"}, "after")
	g.AddEdge("after", graph.End)
	return g.Compile(graph.WithCheckpointer(store))
}

// testGraphSubgraphResume: a subgraph checkpoints under its namespace of
// the thread, readable on the store; a Resume by another instance of the
// program runs only the inner node that asked.
func testGraphSubgraphResume(t *testing.T, s graph.Checkpointer) {
	build := func(calls *counter) (*graph.Compiled[State], *graph.Compiled[State]) {
		sub, err := askingSubgraph(s, calls)
		require.NoError(t, err)
		g := graph.New[State](fItems, fLog, fNote)
		g.AddSubgraph("sub", sub)
		g.AddSequence(graph.Start, "sub", graph.End)
		run, err := g.Compile(graph.WithCheckpointer(s))
		require.NoError(t, err)
		return run, sub
	}
	var calls counter
	run, sub := build(&calls)
	_, err := run.Invoke(ctx(t), State{}, graph.Thread("sub"))
	require.ErrorIs(t, err, graph.ErrInterrupted)

	snap, err := run.State(ctx(t), graph.Thread("sub"))
	require.NoError(t, err)
	require.Len(t, snap.Tasks, 1)
	require.Len(t, snap.Tasks[0].Subgraphs, 1)
	ns := snap.Tasks[0].Subgraphs[0]
	inner, err := sub.State(ctx(t), graph.Thread("sub").In(ns))
	require.NoError(t, err)
	assert.Equal(t, []string{"ask"}, inner.Next)
	assert.Equal(t, []string{"prep", "fast"}, inner.State.Log)

	run2, _ := build(&calls) // another instance of the program
	out, err := run2.Resume(ctx(t), graph.Thread("sub"), graph.Answer("yes"))
	require.NoError(t, err)
	assert.Equal(t, []string{"prep", "fast", "after"}, out.Log)
	assert.Equal(t, []string{"yes"}, out.Items)
	for name, want := range map[string]int{"prep": 1, "fast": 1, "ask": 2, "after": 1} {
		assert.Equal(t, want, calls.get(name), "calls of %s", name)
	}
	require.NoError(t, s.DeleteThread(ctx(t), "sub"))
	_, err = s.Get(ctx(t), graph.Thread("sub").In(ns))
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound, "deleting the thread deletes its namespaces")
}

// testGraphDurability: each durability mode leaves a thread the store
// reads back the same; exit stores one checkpoint per run, and a failed
// exit run is resumed where it stopped.
func testGraphDurability(t *testing.T, s graph.Checkpointer) {
	for _, mode := range []graph.DurabilityMode{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		var runs counter
		fail := true
		c, err := fanOut(s, []string{"a", "b", "c"}, &runs, func(item string) bool { return item == "b" && fail })
		require.NoError(t, err)
		thread := graph.Thread("durability-" + mode.String())
		_, err = c.Invoke(ctx(t), State{}, thread, graph.Durability(mode))
		require.Error(t, err, mode)
		fail = false
		out, err := c.Resume(ctx(t), thread, graph.Durability(mode))
		require.NoError(t, err, mode)
		assert.ElementsMatch(t, []string{"a", "b", "c"}, out.Items, mode)
		assert.Equal(t, []string{"split", "join 3"}, out.Log, mode)
		assert.Equal(t, 1, runs.get("a"), "%s: a finished before b failed", mode)
		assert.Equal(t, 2, runs.get("b"), mode)
		hist, err := c.History(ctx(t), thread, 0)
		require.NoError(t, err)
		switch mode {
		case graph.DurabilityExit:
			assert.Len(t, hist, 2, "exit: one checkpoint per run")
		default:
			assert.Len(t, hist, 4, "%s: input, split, work, join", mode)
		}
		var joined []string
		for _, h := range hist {
			if h.Parent != "" && !slicesContain(hist, h.Parent) {
				joined = append(joined, h.CheckpointID)
			}
		}
		assert.Empty(t, joined, "%s: every parent is stored", mode)
	}
}

func slicesContain(hist []graph.Snapshot[State], id string) bool {
	for _, h := range hist {
		if h.CheckpointID == id {
			return true
		}
	}
	return false
}
