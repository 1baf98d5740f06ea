package server

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
)

// The planning flow is the assistant "flow": with review, its plan is an
// interrupt whose value is LangChain's HITLRequest (approve_plan with the
// steps), and Agent Chat UI's edit decision replaces the steps; the steps
// and the summary are timeline events; the summary is the last ai message;
// the run is kept in the run store as a flow, with its result for research
// show.
func TestAgentAPIFlow(t *testing.T) {
	eng := newEngine(world{})
	eng.flowPlanner = fake.New(
		fake.ToolCalls(fake.ToolCall("planning", map[string]any{"command": "create", "title": "Notes", "steps": []string{"Find the facts", "Write them up"}})),
		fake.Text("One step was done: the notes."),
	)
	ts := startTestServer(t, t.TempDir()+"/runs.db", eng)
	th := ts.newThread()
	path := "/threads/" + th.ThreadID + "/runs/stream"

	evs := ts.lgStream(path, map[string]any{"assistant_id": "flow", "config": map[string]any{"configurable": map[string]any{"review": true}},
		"input": map[string]any{"messages": []map[string]any{{"type": "human", "content": "Make notes"}}}, "stream_mode": []string{"values", "custom"}})
	require.Empty(t, lgOf(evs, "error"), "%v", lgOf(evs, "error"))
	values := lgOf(evs, "values")
	var paused struct {
		Interrupt []struct {
			Value struct {
				ActionRequests []struct {
					Name string `json:"name"`
					Args struct {
						Title string   `json:"title"`
						Steps []string `json:"steps"`
					} `json:"args"`
				} `json:"action_requests"`
				ReviewConfigs []struct {
					AllowedDecisions []string `json:"allowed_decisions"`
				} `json:"review_configs"`
				Revision *int `json:"revision"`
			} `json:"value"`
		} `json:"__interrupt__"`
	}
	require.NoError(t, json.Unmarshal(values[len(values)-1].Data, &paused))
	require.Len(t, paused.Interrupt, 1, "%s", values[len(values)-1].Data)
	v := paused.Interrupt[0].Value
	require.Len(t, v.ActionRequests, 1)
	assert.Equal(t, "approve_plan", v.ActionRequests[0].Name)
	assert.Equal(t, "Notes", v.ActionRequests[0].Args.Title)
	assert.Equal(t, []string{"Find the facts", "Write them up"}, v.ActionRequests[0].Args.Steps)
	assert.Equal(t, []string{"approve", "edit", "reject"}, v.ReviewConfigs[0].AllowedDecisions)
	require.NotNil(t, v.Revision, "the PlanReview stays beside the HITLRequest")
	eng.flowMu.Lock()
	assert.Empty(t, eng.flowSteps, "no step runs before the plan is approved")
	eng.flowMu.Unlock()

	evs = ts.lgStream(path, map[string]any{"assistant_id": "flow", "command": map[string]any{"resume": map[string]any{"decisions": []map[string]any{
		{"type": "edit", "edited_action": map[string]any{"name": "approve_plan", "args": map[string]any{"title": "Notes", "steps": []string{"Write the notes"}}}}}}},
		"stream_mode": []string{"values", "custom"}})
	require.Empty(t, lgOf(evs, "error"), "%v", lgOf(evs, "error"))
	values = lgOf(evs, "values")
	var done flowValues
	require.NoError(t, json.Unmarshal(values[len(values)-1].Data, &done))
	assert.Equal(t, nodes.FlowCompleted, done.Status)
	assert.Equal(t, "One step was done: the notes.", done.Summary)
	require.Len(t, done.Outcomes, 1)
	assert.Equal(t, "Done: Write the notes", done.Outcomes[0].Output)
	require.Len(t, done.Messages, 2)
	assert.Equal(t, "Make notes", done.Messages[0].Content)
	assert.Equal(t, "One step was done: the notes.", done.Messages[1].Content)
	eng.flowMu.Lock()
	assert.Equal(t, []string{"Write the notes"}, eng.flowSteps, "the edited plan ran")
	eng.flowMu.Unlock()
	var kinds []string
	for _, c := range lgOf(evs, "custom") {
		var ce customEvent
		require.NoError(t, json.Unmarshal(c.Data, &ce))
		if ce.Type == "activity" {
			kinds = append(kinds, ce.Activity.Kind)
		}
	}
	assert.Subset(t, kinds, []string{"flow_approved", "flow_step_start", "flow_step_done", "flow_done"})

	// Kept as a flow run, with its result.
	runs, err := ts.store.Runs.ThreadRuns(t.Context(), th.ThreadID)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	for _, r := range runs {
		assert.Equal(t, runstore.KindFlow, r.Kind)
	}
	stored, err := ts.store.Runs.Get(t.Context(), runs[1].ID)
	require.NoError(t, err)
	assert.Equal(t, runstore.StatusDone, stored.Status)
	var res nodes.FlowResult
	require.NoError(t, json.Unmarshal(stored.Report, &res), "the run's report: %q", stored.Report)
	assert.Equal(t, "One step was done: the notes.", res.Summary)

	// A flow thread takes one task.
	evs = ts.lgStream(path, map[string]any{"assistant_id": "flow", "input": map[string]any{"messages": []map[string]any{{"type": "human", "content": "more"}}}})
	require.Len(t, lgOf(evs, "error"), 1)
	assert.Contains(t, string(lgOf(evs, "error")[0].Data), "one task")
}

// Text answers a plan review as research resume --answer does: "no:
// REASON" rejects the plan; the flow ends rejected without running a step.
func TestAgentAPIFlowPlanRejected(t *testing.T) {
	eng := newEngine(world{})
	eng.flowPlanner = fake.New(
		fake.ToolCalls(fake.ToolCall("planning", map[string]any{"command": "create", "title": "Risky", "steps": []string{"Delete everything"}})),
		fake.Text("Nothing was done: the plan was rejected (too risky)."),
	)
	ts := startTestServer(t, t.TempDir()+"/runs.db", eng)
	th := ts.newThread()
	path := "/threads/" + th.ThreadID + "/runs/wait"
	out := lgCall[map[string]json.RawMessage](ts, "POST", path, map[string]any{"assistant_id": "flow", "config": map[string]any{"configurable": map[string]any{"review": true}},
		"input": map[string]any{"messages": []map[string]any{{"type": "human", "content": "Clean up"}}}}, 200)
	require.NotEmpty(t, out["__interrupt__"])
	out = lgCall[map[string]json.RawMessage](ts, "POST", path, map[string]any{"assistant_id": "flow", "command": map[string]any{"resume": "no: too risky"}}, 200)
	assert.Empty(t, out["__interrupt__"])
	assert.JSONEq(t, `"rejected"`, string(out["status"]))
	eng.flowMu.Lock()
	defer eng.flowMu.Unlock()
	assert.Empty(t, eng.flowSteps)
}
