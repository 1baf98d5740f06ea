package app

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/runstore"
)

// threadState is a checkpoint's minimal state.
var threadState = json.RawMessage(`{}`)

// TestStoreRemoveAndPrune: a thread's checkpoints go with the last run that
// uses it, and stay while a follow-up run of the thread is kept.
func TestStoreRemoveAndPrune(t *testing.T) {
	ctx := context.Background()
	st, err := OpenStore(ctx, &config.Config{Store: config.Store(filepath.Join(t.TempDir(), "runs.db"))})
	require.NoError(t, err)
	defer st.Close()

	begin := func(thread string) *runstore.Run {
		tr, err := st.Begin(ctx, runstore.KindResearch, "q", thread, Settings{}, nil)
		require.NoError(t, err)
		require.NoError(t, tr.Finish(ctx, runstore.StatusDone, "", nil))
		return tr.Run
	}
	checkpoint := func(thread string) {
		require.NoError(t, st.Checkpointer.Put(ctx, &graph.Checkpoint{Thread: thread, ID: "c1", State: threadState, Created: time.Now()}))
	}
	stored := func(thread string) bool {
		_, err := st.Checkpointer.Get(ctx, graph.Thread(thread))
		if errors.Is(err, graph.ErrCheckpointNotFound) {
			return false
		}
		require.NoError(t, err)
		return true
	}

	first := begin("")
	checkpoint(first.Thread)
	followUp := begin(first.Thread)
	alone := begin("")
	checkpoint(alone.Thread)

	require.NoError(t, st.Remove(ctx, first))
	assert.True(t, stored(first.Thread), "the follow-up still uses the thread")
	require.NoError(t, st.Remove(ctx, followUp))
	assert.False(t, stored(first.Thread), "the thread's last run is gone, and its checkpoints with it")

	time.Sleep(2 * time.Millisecond) // kept starts strictly later than alone
	kept := begin("")
	checkpoint(kept.Thread)
	removed, err := st.Prune(ctx, kept.Started)
	require.NoError(t, err)
	require.Len(t, removed, 1)
	assert.Equal(t, alone.ID, removed[0].ID)
	assert.False(t, stored(alone.Thread), "pruned with its run")
	assert.True(t, stored(kept.Thread), "a newer run is kept")
}
