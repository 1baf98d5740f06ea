package server

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
)

// The Agent Server API's threads and runs are in the run store: a research
// run is listed with its question and status (research runs) and its
// report is read back from its thread (research show); a server started
// again on the store lists the threads with their metadata and their runs,
// and a run the server before left running is interrupted.
func TestAgentAPIKeepsThreadsAndRuns(t *testing.T) {
	ts := newTestServer(t, world{})
	th := lgCall[struct {
		ThreadID string `json:"thread_id"`
	}](ts, "POST", "/threads", map[string]any{"metadata": map[string]string{"owner": "ann"}}, 200)
	path := "/threads/" + th.ThreadID
	lgCall[json.RawMessage](ts, "POST", path+"/runs/wait", map[string]any{"assistant_id": "research",
		"input": map[string]any{"messages": []map[string]string{{"type": "human", "content": "What is deep research?"}}}}, 200)
	runs := lgCall[[]lgRun](ts, "GET", path+"/runs", nil, 200)
	require.Len(t, runs, 1)
	done := runs[0]

	// research runs and research show.
	listed, err := ts.store.Runs.List(t.Context(), runstore.ListOptions{})
	require.NoError(t, err)
	require.Len(t, listed, 1)
	assert.Equal(t, done.RunID, listed[0].ID)
	assert.Equal(t, th.ThreadID, listed[0].Thread)
	assert.Equal(t, runstore.KindResearch, listed[0].Kind)
	assert.Equal(t, "What is deep research?", listed[0].Question)
	assert.Equal(t, runstore.StatusDone, listed[0].Status)
	assert.False(t, listed[0].Ended.IsZero())
	stored, err := ts.store.Runs.Get(t.Context(), done.RunID[:8])
	require.NoError(t, err, "found by a prefix of its id, as research show finds it")
	set, err := app.SettingsOf(stored)
	require.NoError(t, err)
	rep, err := app.SavedReport(t.Context(), ts.store.Checkpointer, stored.Thread, set.Backend)
	require.NoError(t, err)
	assert.Contains(t, rep.Markdown(), "## Findings")

	// A run left running by a server that died.
	var rec apiRunSettings
	require.NoError(t, json.Unmarshal(stored.Settings, &rec))
	rec.Record.Status = "running"
	stored.Settings, err = json.Marshal(rec)
	require.NoError(t, err)
	stored.Status = runstore.StatusRunning
	require.NoError(t, ts.store.Runs.Update(t.Context(), stored))

	ts.stop()
	again := startTestServer(t, ts.path, newEngine(world{}))
	found := lgCall[[]struct {
		ThreadID string               `json:"thread_id"`
		Metadata agentserver.Metadata `json:"metadata"`
	}](again, "POST", "/threads/search", map[string]any{"metadata": map[string]string{"owner": "ann"}}, 200)
	require.Len(t, found, 1)
	assert.Equal(t, th.ThreadID, found[0].ThreadID)
	assert.JSONEq(t, `"research"`, string(found[0].Metadata["graph_id"]))
	runs = lgCall[[]lgRun](again, "GET", path+"/runs", nil, 200)
	require.Len(t, runs, 1)
	assert.Equal(t, done.RunID, runs[0].RunID)
	assert.Equal(t, "interrupted", runs[0].Status)
	assert.Equal(t, "What is deep research?", runs[0].question(), "its request is kept")
	got, err := again.store.Runs.Get(t.Context(), done.RunID)
	require.NoError(t, err)
	assert.Equal(t, runstore.StatusInterrupted, got.Status, "and the run store says so")

	// Deleting the thread removes it from the run store.
	status, _, _ := again.do("DELETE", AgentAPIPrefix+path, nil)
	require.Equal(t, 204, status)
	_, err = again.store.Runs.GetThread(t.Context(), th.ThreadID)
	assert.ErrorIs(t, err, runstore.ErrNotFound)
}
