package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
)

// A research run from the API: queued, run in the background, its events
// streamed (activity lines as the CLI prints them, tokens, state, report,
// end), its report and its thread.
func TestResearchRun(t *testing.T) {
	ts := newTestServer(t, world{tokenDelay: time.Millisecond})
	run := ts.ask(RunRequest{Input: "How do checkpoints work?", Effort: "low"})
	assert.Equal(t, runstore.StatusQueued, run.Status)
	assert.Equal(t, "low", run.Settings.Effort)

	resp := ts.stream(context.Background(), run, 0)
	defer resp.Body.Close()
	evs := readSSE(t, resp.Body, nil)
	require.NotEmpty(t, evs)
	assert.Equal(t, EventEnd, evs[len(evs)-1].Type, "the stream ends with end")
	var kinds []string
	var answer strings.Builder
	var rep app.ReportDoc
	last := int64(0)
	for _, ev := range evs {
		assert.Greater(t, ev.ID, last, "ids increase")
		last = ev.ID
		switch ev.Type {
		case EventActivity:
			var a Activity
			require.NoError(t, json.Unmarshal([]byte(ev.Data), &a))
			kinds = append(kinds, a.Kind)
			if a.Kind == "searched" {
				assert.Equal(t, `Searched "query 1": 2 sources (example, docs)`, a.Text)
			}
		case EventToken:
			var tok tokenData
			require.NoError(t, json.Unmarshal([]byte(ev.Data), &tok))
			answer.WriteString(tok.Text)
		case EventReport:
			require.NoError(t, json.Unmarshal([]byte(ev.Data), &rep))
		}
	}
	assert.Equal(t, []string{"generating_queries", "queries", "searching", "searched", "reflecting", "reflected", "finalizing", "answered"}, kinds)
	assert.Contains(t, answer.String(), "The answer is **clear**")
	assert.Equal(t, app.ReportSchema, rep.Schema)
	require.Len(t, rep.Sources, 2)
	assert.Equal(t, "https://example.org/query-1", rep.Sources[0].URL)
	assert.Contains(t, rep.Answer, "[1](https://example.org/query-1)")

	got := ts.waitRun(run, runstore.StatusDone)
	assert.Positive(t, got.Tokens)
	assert.Equal(t, 4, got.Calls)
	var stored app.ReportDoc
	require.NoError(t, json.Unmarshal(got.Report, &stored))
	assert.Equal(t, rep.Answer, stored.Answer)

	th := call[ThreadDetail](ts, "GET", "/threads/"+run.ThreadID, nil, 200)
	assert.Equal(t, ThreadIdle, th.Status)
	assert.Equal(t, "How do checkpoints work?", th.Title)
	assert.Equal(t, runstore.KindResearch, th.Kind)
	require.Len(t, th.Runs, 1)
	assert.Contains(t, string(th.Values), `"answer"`)
	hist := call[History](ts, "GET", "/threads/"+run.ThreadID+"/history", nil, 200)
	require.NotEmpty(t, hist.Checkpoints)
	assert.Equal(t, run.ID, hist.Checkpoints[0].RunID)
	assert.Empty(t, hist.Checkpoints[0].Next, "the newest checkpoint is the end")
}
