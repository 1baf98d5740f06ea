package nodes_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/tools"
)

// bigPage returns a page of 8,000 characters with a source of its own.
func bigPage() tools.Tool {
	return tools.MustFunc("fetch", "Fetches a page.", func(_ context.Context, a lookupArgs) (tools.Result, error) {
		res := tools.Text(strings.Repeat("Lorem ipsum "+a.Key+" ", 8000/(13+len(a.Key))))
		res.Sources = []tools.Source{{URL: "https://example.com/" + a.Key, Title: "Page " + a.Key}}
		return res, nil
	})
}

// longRun is a 40-step run with three parallel fetches a step, then the
// best effort: it must cite a page of step 1 and one of step 40.
func longRun(t *testing.T, budget int) (maxTokens, maxChars int, res *nodes.AgentResult) {
	t.Helper()
	m := fake.New().Strict()
	for step := range 40 {
		var calls []schemas.ToolCall
		for k := range 3 {
			calls = append(calls, fake.ToolCall("fetch", lookupArgs{Key: fmt.Sprintf("p%d-%d", step, k)}))
		}
		m.Add(fake.ToolCalls(calls...))
	}
	m.Add(fake.Text("Step one found a [S1]; the last step found z [S120].").When(fake.AnyContains("[S1] https://example.com/p0-0")))
	a := newAgent(t, m, nodes.AgentConfig{MaxSteps: 40, ContextTokens: budget}, bigPage())
	res, err := a.Run(context.Background(), "Read the pages", nil)
	require.NoError(t, err)
	for _, c := range m.Calls() {
		chars := 0
		for _, msg := range c.Messages {
			chars += len(msg.Content)
			for _, tc := range msg.ToolCalls {
				chars += len(tc.Name) + len(tc.Arguments)
			}
		}
		maxChars = max(maxChars, chars)
		maxTokens = max(maxTokens, nodes.EstimateTokens(c.Messages, c.Request.Tools))
	}
	return maxTokens, maxChars, res
}

// TestAgentContextBudget measures the largest prompt of a 40-step run with
// parallel calls, without a budget (the 40-message window alone) and with
// the default budget: every call stays under the budget, and the answer
// still cites a page from a condensed step.
func TestAgentContextBudget(t *testing.T) {
	beforeTokens, beforeChars, _ := longRun(t, 1<<30)
	afterTokens, afterChars, res := longRun(t, nodes.DefaultContextTokens)
	t.Logf("largest prompt of a 40-step run, 3 parallel calls of 8,000 characters a step: window only %d characters (~%d tokens); budget %d: %d characters (~%d tokens)",
		beforeChars, beforeTokens, nodes.DefaultContextTokens, afterChars, afterTokens)
	assert.Greater(t, beforeTokens, nodes.DefaultContextTokens, "the window alone lets the prompt grow past the budget")
	assert.LessOrEqual(t, afterTokens, nodes.DefaultContextTokens, "every call is within the budget")
	assert.Equal(t, nodes.AgentMaxSteps, res.Status)
	assert.Equal(t, 120, res.Gathered)
	require.Len(t, res.Sources, 2)
	assert.Equal(t, "https://example.com/p0-0", res.Sources[0].URL, "a page of a condensed step is cited")
	assert.Equal(t, "https://example.com/p39-2", res.Sources[1].URL)
}

func TestAgentContextNoteSaysSo(t *testing.T) {
	m := fake.New().Strict()
	for step := range 6 {
		m.Add(fake.ToolCalls(fake.ToolCall("fetch", lookupArgs{Key: fmt.Sprintf("p%d", step)})))
	}
	m.Add(fake.ToolCalls(terminate("success", "done [S1]")))
	a := newAgent(t, m, nodes.AgentConfig{ContextTokens: 6000}, bigPage())
	_, err := a.Run(context.Background(), "Read", nil)
	require.NoError(t, err)
	last := m.Calls()[len(m.Calls())-1].Messages
	require.Greater(t, len(last), 3)
	assert.Equal(t, "Read", last[1].Content, "the task stays")
	assert.Contains(t, last[2].Content, "Context note: to stay within the context budget")
	assert.Contains(t, last[2].Content, "[S1] https://example.com/p0")
	assert.Contains(t, last[2].Content, "Step 1: [called fetch")
	assert.LessOrEqual(t, nodes.EstimateTokens(last, m.Calls()[len(m.Calls())-1].Request.Tools), 6000)
}

func TestAgentRecoversFromContextOverflow(t *testing.T) {
	overflow := &llm.APIError{Provider: "openai", Status: 400, Message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."}
	m := fake.New(
		fake.ToolCalls(fake.ToolCall("fetch", lookupArgs{Key: "a"})),
		fake.ToolCalls(fake.ToolCall("fetch", lookupArgs{Key: "b"})),
		fake.Error(overflow),
		fake.ToolCalls(terminate("success", "a and b [S1] [S2]")),
	).Strict()
	a := newAgent(t, m, nodes.AgentConfig{ModelRetry: &graph.RetryPolicy{MaxAttempts: 1}}, bigPage())
	res, err := a.Run(context.Background(), "Read", nil)
	require.NoError(t, err)
	assert.Equal(t, nodes.AgentSuccess, res.Status)
	calls := m.Calls()
	require.Len(t, calls, 4)
	refused, retried := nodes.EstimateTokens(calls[2].Messages, calls[2].Request.Tools), nodes.EstimateTokens(calls[3].Messages, calls[3].Request.Tools)
	assert.LessOrEqual(t, retried, refused/2+200, "the retry is condensed to half")
	assert.Contains(t, calls[3].Messages[2].Content, "Context note:")
	assert.Len(t, res.Sources, 2, "sources of condensed steps are still cited")

	// A second overflow fails the run, with its partial result.
	m = fake.New(fake.ToolCalls(fake.ToolCall("fetch", lookupArgs{Key: "a"})), fake.Error(overflow), fake.Error(overflow)).Strict()
	a = newAgent(t, m, nodes.AgentConfig{ModelRetry: &graph.RetryPolicy{MaxAttempts: 1}}, bigPage())
	res, err = a.Run(context.Background(), "Read", nil)
	require.ErrorIs(t, err, llm.ErrBadRequest)
	assert.Equal(t, nodes.AgentError, res.Status)
	assert.Len(t, m.Calls(), 3)
}
