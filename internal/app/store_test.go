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

// TestContinueClaimsTheRun: two resumes of a run that both read it before
// either wrote (the race of two `research resume ID` started together):
// the first claims it, the second is refused before anything runs, and the
// run stays the first's.
func TestContinueClaimsTheRun(t *testing.T) {
	ctx := context.Background()
	st, err := OpenStore(ctx, &config.Config{Store: config.Store(filepath.Join(t.TempDir(), "runs.db"))})
	require.NoError(t, err)
	defer st.Close()
	tr, err := st.Begin(ctx, runstore.KindResearch, "q", "", Settings{}, nil)
	require.NoError(t, err)
	require.NoError(t, tr.Finish(ctx, runstore.StatusInterrupted, "killed", nil))

	first, err := st.FindRun(ctx, tr.Run.ID)
	require.NoError(t, err)
	second, err := st.FindRun(ctx, tr.Run.ID)
	require.NoError(t, err)

	won, err := st.Continue(ctx, first, nil)
	require.NoError(t, err)
	assert.Equal(t, runstore.StatusRunning, won.Run.Status)

	_, err = st.Continue(ctx, second, nil)
	require.ErrorIs(t, err, runstore.ErrClaimed)
	assert.Contains(t, err.Error(), tr.Run.ID)
	assert.Equal(t, runstore.StatusInterrupted, second.Status, "the refused resume's run is left as it was read")

	stored, err := st.FindRun(ctx, tr.Run.ID)
	require.NoError(t, err)
	assert.Equal(t, runstore.StatusRunning, stored.Status)
	assert.Equal(t, won.Run.Updated.Truncate(time.Microsecond), stored.Updated)
}

// TestTrackerJournal: the calls a run records are its own, kept in the
// store, and served again to the run.
func TestTrackerJournal(t *testing.T) {
	ctx := context.Background()
	st, err := OpenStore(ctx, &config.Config{Store: config.Store(filepath.Join(t.TempDir(), "runs.db"))})
	require.NoError(t, err)
	defer st.Close()
	a, err := st.Begin(ctx, runstore.KindResearch, "a", "", Settings{}, nil)
	require.NoError(t, err)
	b, err := st.Begin(ctx, runstore.KindResearch, "b", "", Settings{}, nil)
	require.NoError(t, err)

	_, ok, err := a.Journal().Recall(ctx, "search:x")
	require.NoError(t, err)
	assert.False(t, ok)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.NoError(t, a.Journal().Record(cancelled, "search:x", []byte(`["r"]`)), "a paid call is recorded even as the run stops")
	data, ok, err := a.Journal().Recall(ctx, "search:x")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.JSONEq(t, `["r"]`, string(data))
	_, ok, err = b.Journal().Recall(ctx, "search:x")
	require.NoError(t, err)
	assert.False(t, ok, "another run's calls are not served")
	assert.Nil(t, (*Tracker)(nil).Journal())
}
