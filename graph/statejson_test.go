package graph_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// restState has fields with handles and one without (Title: in the rest
// channel of a compact checkpoint).
type restState struct {
	Title string   `json:"title"`
	Log   []string `json:"log"`
	N     int      `json:"n"`
}

// TestCheckpointStateJSON: a compact checkpoint's channels put together are
// the state as encoding the struct gives it, at every checkpoint of a
// thread, the ones whose channels point to older versions included.
func TestCheckpointStateJSON(t *testing.T) {
	log := graph.Append(func(s *restState) *[]string { return &s.Log })
	n := graph.Value(func(s *restState) *int { return &s.N })
	g := graph.New[restState](log, n)
	g.AddNode("a", func(context.Context, restState) (graph.Update[restState], error) {
		return graph.Writes(log.Add("a")), nil
	})
	g.AddNode("b", func(_ context.Context, s restState) (graph.Update[restState], error) {
		return graph.Writes(n.Set(s.N + 1)), nil
	})
	g.AddSequence(graph.Start, "a", "b", graph.End)
	store := graph.NewMemorySaver()
	c, err := g.Compile(graph.WithCheckpointer(store))
	require.NoError(t, err)
	ctx := context.Background()
	thread := graph.Thread("t")
	_, err = c.Invoke(ctx, restState{Title: "first"}, thread)
	require.NoError(t, err)
	_, err = c.Invoke(ctx, restState{}, thread)
	require.NoError(t, err)

	cps, err := store.List(ctx, thread, 0)
	require.NoError(t, err)
	require.NotEmpty(t, cps)
	for _, cp := range cps {
		require.Equal(t, graph.CheckpointFormat, cp.Format)
		got, err := cp.StateJSON()
		require.NoError(t, err)
		snap, err := c.State(ctx, thread.At(cp.ID))
		require.NoError(t, err)
		want, err := json.Marshal(snap.State)
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(got), "checkpoint %s (step %d)", cp.ID, cp.Step)
	}
	// A checkpoint missing a channel's value says so.
	cp := cps[0]
	cp.Values = cp.Values[:len(cp.Values)-1]
	_, err = cp.StateJSON()
	assert.ErrorContains(t, err, "the store lost some")
}
