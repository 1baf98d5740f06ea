package server

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm/fake"
)

// An agent run that reaches its step limit did not do its task: it is
// failed, with why, and its best-effort answer in the document — never
// "done".
func TestAgentStepLimitFails(t *testing.T) {
	eng := newEngine(world{})
	var replies []fake.Reply
	for i := range 5 { // the harness's agents have 5 steps
		replies = append(replies, fake.ToolCalls(fake.ToolCall("no_such_tool", map[string]int{"try": i})).WithTokens(100, 10))
	}
	replies = append(replies, fake.Text("A best effort.").WithTokens(100, 10))
	eng.agentScript = fake.New(replies...)
	ts := startTestServer(t, t.TempDir()+"/runs.db", eng)
	run := ts.ask(RunRequest{Kind: "agent", Input: "Loop"})
	failed := ts.waitRun(run, runstore.StatusFailed, runstore.StatusDone)
	require.Equal(t, runstore.StatusFailed, failed.Status, "a run that ran out of steps is not done")
	assert.Contains(t, failed.Error, "step limit (5")
	var doc struct {
		Status     string `json:"status"`
		Answer     string `json:"answer"`
		BestEffort bool   `json:"best_effort"`
		RunID      string `json:"run_id"`
		ThreadID   string `json:"thread_id"`
	}
	require.NoError(t, json.Unmarshal(failed.Report, &doc), string(failed.Report))
	assert.Equal(t, "max_steps", doc.Status)
	assert.True(t, doc.BestEffort)
	assert.Equal(t, "A best effort.", doc.Answer, "the best effort is kept")
	assert.Equal(t, run.ID, doc.RunID, "the document names its run")
	assert.Equal(t, run.ThreadID, doc.ThreadID)
}

// An agent's timeline counts its tokens as its steps spend them (it showed
// "0 tok" for every step).
func TestAgentTimelineTokens(t *testing.T) {
	eng := newEngine(world{})
	eng.agentScript = fake.New(
		fake.ToolCalls(fake.ToolCall("no_such_tool", map[string]string{})).WithTokens(1000, 100),
		fake.ToolCalls(fake.ToolCall("terminate", map[string]string{"status": "success", "answer": "Done."})).WithTokens(2000, 100),
	)
	ts := startTestServer(t, t.TempDir()+"/runs.db", eng)
	run := ts.ask(RunRequest{Kind: "agent", Input: "Finish"})
	done := ts.waitRun(run, runstore.StatusDone)
	assert.EqualValues(t, 3200, done.Tokens)

	resp := ts.stream(context.Background(), run, 0)
	defer resp.Body.Close()
	var steps []string
	for _, ev := range readSSE(t, resp.Body, nil) {
		if ev.Type != EventActivity {
			continue
		}
		var a Activity
		require.NoError(t, json.Unmarshal([]byte(ev.Data), &a))
		steps = append(steps, fmt.Sprintf("%s %d", a.Kind, a.Tokens))
	}
	assert.Equal(t, []string{"agent_think 1100", "agent_act 1100", "agent_think 3200", "agent_act 3200", "agent_done 3200"}, steps)
}
