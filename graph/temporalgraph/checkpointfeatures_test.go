package temporalgraph_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/internal/graphtest"
	"github.com/deepgraph/deepgraph/graph/temporalgraph"
)

// countingSaver counts the writes made to a MemorySaver.
type countingSaver struct {
	*graph.MemorySaver
	writes atomic.Int32
}

func (c *countingSaver) Put(ctx context.Context, cp *graph.Checkpoint) error {
	c.writes.Add(1)
	return c.MemorySaver.Put(ctx, cp)
}

func (c *countingSaver) PutWrites(ctx context.Context, at graph.Ref, run string, w ...graph.TaskWrite) error {
	c.writes.Add(1)
	return c.MemorySaver.PutWrites(ctx, at, run, w...)
}

// TestCheckpointFeaturesDoNotApply pins what the package documents: a
// graph compiled with a checkpointer and a durability mode, with a
// subgraph node, runs on Temporal as in-process, and nothing is written to
// the checkpointer — no checkpoints, no subgraph namespace, no compact
// channel values: Temporal's history is the run's record.
func TestCheckpointFeaturesDoNotApply(t *testing.T) {
	inner := graphtest.New()
	inner.AddNode("i1", graphtest.LogNode("i1"))
	inner.AddNode("i2", graphtest.LogNode("i2"))
	inner.AddSequence(graph.Start, "i1", "i2", graph.End)
	sub := tgCompile(t, inner)
	saver := &countingSaver{MemorySaver: graph.NewMemorySaver()}
	outer := graphtest.New()
	outer.AddNode("a", graphtest.LogNode("a"))
	outer.AddSubgraph("sub", sub)
	outer.AddSequence(graph.Start, "a", "sub", graph.End)
	c := tgCompile(t, outer, graph.WithCheckpointer(saver), graph.WithDurability(graph.DurabilityExit))

	want, err := c.Invoke(t.Context(), graphtest.State{}, graph.Thread("in-process"))
	require.NoError(t, err)
	require.NotZero(t, saver.writes.Load(), "in-process, the run is checkpointed")
	saver.writes.Store(0)

	got, err := runOnTemporal(t, newGraph(t, "features", c, temporalgraph.Options[graphtest.State]{}), temporalgraph.Input[graphtest.State]{})
	require.NoError(t, err)
	assert.Equal(t, want, got, "the same final state")
	assert.Zero(t, saver.writes.Load(), "on Temporal nothing is written to the checkpointer")
}
