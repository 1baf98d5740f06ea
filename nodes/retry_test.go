package nodes_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/schemas"
)

// brokenStream is what a provider reports for a stream cut off after its 200
// once its own retries are spent.
var brokenStream = &llm.APIError{Provider: "fake", Message: "the event stream broke off",
	Err: fmt.Errorf("%w: connection reset", llm.ErrStreamBroken)}

var badKey = &llm.APIError{Provider: "fake", Status: 401, KeyEnv: "FAKE_KEY", Message: "bad key"}

func TestAgentRetriesTransientModelErrorsOfThinkOnly(t *testing.T) {
	var n atomic.Int32
	m := fake.New(
		fake.Error(brokenStream),
		fake.ToolCalls(fake.ToolCall("lookup", lookupArgs{Key: "a"})),
		fake.Error(&llm.APIError{Provider: "fake", Status: 503, Message: "overloaded"}), // after a tool ran
		fake.ToolCalls(terminate("success", "a is 1")),
	)
	a := newAgent(t, m, nodes.AgentConfig{}, lookup(t, &n, map[string]string{"a": "1"}))
	res, err := a.Run(context.Background(), "task", nil)
	require.NoError(t, err)
	assert.Equal(t, nodes.AgentSuccess, res.Status)
	assert.Equal(t, "a is 1", res.Answer)
	assert.EqualValues(t, 1, n.Load(), "the tool ran once: act is never re-run for a model error")
	assert.Equal(t, 2, res.Steps)
	assert.Zero(t, m.Remaining())
}

func TestAgentRetriesTheBestEffortCall(t *testing.T) {
	var n atomic.Int32
	m := fake.New(
		fake.ToolCalls(fake.ToolCall("lookup", lookupArgs{Key: "a"})),
		fake.Error(&llm.APIError{Provider: "fake", Status: 429, Message: "slow down"}),
		fake.Text("Best guess: a is 1."),
	)
	// A policy of one's own: RetryOn left nil still means transient errors only.
	fast := &graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond}
	a := newAgent(t, m, nodes.AgentConfig{MaxSteps: 1, ModelRetry: fast}, lookup(t, &n, map[string]string{"a": "1"}))
	res, err := a.Run(context.Background(), "task", nil)
	require.NoError(t, err)
	assert.Equal(t, nodes.AgentMaxSteps, res.Status)
	assert.Equal(t, "Best guess: a is 1.", res.Answer)
}

func TestAgentModelRetryCanBeTurnedOff(t *testing.T) {
	m := fake.New(fake.Error(brokenStream), fake.ToolCalls(terminate("success", "never")))
	a := newAgent(t, m, nodes.AgentConfig{ModelRetry: &graph.RetryPolicy{MaxAttempts: 1}})
	_, err := a.Run(context.Background(), "task", nil)
	require.ErrorIs(t, err, llm.ErrStreamBroken)
	assert.Len(t, m.Calls(), 1)
}

func TestModelRetryOption(t *testing.T) {
	p := nodes.DefaultModelRetry()
	assert.True(t, p.RetryOn(brokenStream))
	assert.False(t, p.RetryOn(badKey))
	assert.False(t, p.RetryOn(context.Canceled))
	assert.Equal(t, 3, p.MaxAttempts)

	// A Structured node of one's own, added with ModelRetry.
	type state struct{ Plan []string }
	plan := graph.Value(func(s *state) *[]string { return &s.Plan })
	type planOut struct {
		Steps []string `json:"steps"`
	}
	m := fake.New(fake.Error(&llm.APIError{Provider: "fake", Status: 503, Message: "down"}), fake.JSON(planOut{Steps: []string{"a"}}))
	g := graph.New[state](plan)
	g.AddNode("plan", nodes.Structured[state, planOut]{
		Model:  m,
		Prompt: func(state) []schemas.Message { return []schemas.Message{schemas.UserMessage("plan")} },
		Write:  func(_ state, o planOut) graph.Update[state] { return graph.Writes(plan.Set(o.Steps)) },
	}.Node(), nodes.ModelRetry(&graph.RetryPolicy{InitialInterval: time.Millisecond}))
	g.AddEdge(graph.Start, "plan")
	g.AddEdge("plan", graph.End)
	run, err := g.Compile()
	require.NoError(t, err)
	out, err := run.Invoke(context.Background(), state{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, out.Plan)
}

func TestAgentDoesNotRetryARejectedKey(t *testing.T) {
	m := fake.New(fake.Error(badKey), fake.ToolCalls(terminate("success", "never")))
	a := newAgent(t, m, nodes.AgentConfig{})
	_, err := a.Run(context.Background(), "task", nil)
	require.ErrorIs(t, err, llm.ErrAuth)
	assert.Len(t, m.Calls(), 1)
}

func TestFlowRetriesTransientPlannerErrors(t *testing.T) {
	planner := fake.New(
		fake.Error(brokenStream),
		planCall("create", "Plan", "Do it"),
		fake.Error(&llm.APIError{Provider: "fake", Status: 500, Message: "internal"}),
		fake.Text("Done."),
	)
	w := &recorder{name: "writer"}
	f := newFlow(t, nodes.FlowConfig{Planner: planner}, w)
	res, err := f.Run(context.Background(), "task", nil)
	require.NoError(t, err)
	assert.Equal(t, nodes.FlowCompleted, res.Status)
	assert.Equal(t, "Done.", res.Summary)
	assert.Equal(t, []string{"Do it"}, w.steps(), "the step ran once")

	planner = fake.New(fake.Error(badKey), planCall("create", "Plan", "Do it"))
	f = newFlow(t, nodes.FlowConfig{Planner: planner}, &recorder{name: "writer"})
	_, err = f.Run(context.Background(), "task", nil)
	require.ErrorIs(t, err, llm.ErrAuth)
	assert.Len(t, planner.Calls(), 1)
}
