package nodes_test

import (
	"context"
	"errors"
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

// cutAfter is a stream cut off after its 200, the provider having reported
// prompt and completion tokens by then.
func cutAfter(prompt, completion int) *llm.APIError {
	return &llm.APIError{Provider: "fake", Message: "the event stream broke off",
		Err: fmt.Errorf("%w: connection reset", llm.ErrStreamBroken), Usage: llm.Usage{PromptTokens: prompt, CompletionTokens: completion}}
}

var fastRetry = &graph.RetryPolicy{InitialInterval: time.Millisecond}

func TestAgentCountsTheTokensOfARetriedThink(t *testing.T) {
	var n atomic.Int32
	m := fake.New(
		fake.Error(cutAfter(7, 3)),
		fake.ToolCalls(fake.ToolCall("lookup", lookupArgs{Key: "a"})).WithTokens(50, 10),
		fake.ToolCalls(terminate("success", "a is 1")).WithTokens(80, 12),
	)
	a := newAgent(t, m, nodes.AgentConfig{ModelRetry: fastRetry}, lookup(t, &n, map[string]string{"a": "1"}))
	res, err := a.Run(context.Background(), "task", nil)
	require.NoError(t, err)
	assert.Equal(t, nodes.AgentSuccess, res.Status)
	assert.Equal(t, llm.Tally{Calls: 3, Failed: 1, Usage: llm.Usage{PromptTokens: 137, CompletionTokens: 25, TotalTokens: 152}},
		res.Usage[llm.RoleAgent], "the cut stream's 7+3 tokens and the two replies', each once")
}

func TestAgentCountsTheTokensOfAThinkThatFailsTheRun(t *testing.T) {
	var n atomic.Int32
	refused := &llm.APIError{Provider: "fake", Status: 400, Message: "context too long", Usage: llm.Usage{PromptTokens: 11, CompletionTokens: 4}}
	m := fake.New(
		fake.ToolCalls(fake.ToolCall("lookup", lookupArgs{Key: "a"})).WithTokens(50, 10),
		fake.Error(refused),
	)
	a := newAgent(t, m, nodes.AgentConfig{ModelRetry: fastRetry}, lookup(t, &n, map[string]string{"a": "1"}))
	res, err := a.Run(context.Background(), "task", nil)
	require.ErrorIs(t, err, llm.ErrBadRequest)
	require.NotNil(t, res)
	assert.Equal(t, nodes.AgentError, res.Status)
	assert.Equal(t, llm.Tally{Calls: 2, Failed: 1, Usage: llm.Usage{PromptTokens: 61, CompletionTokens: 14, TotalTokens: 60}}, res.Usage[llm.RoleAgent])
	assert.Equal(t, llm.UsageByRole{llm.RoleAgent: {Calls: 1, Failed: 1, Usage: llm.Usage{PromptTokens: 11, CompletionTokens: 4}}}, llm.UsageOfError(err))
}

type answerState struct {
	Answer string
	Usage  llm.UsageByRole
}

var (
	answerField = graph.Value(func(s *answerState) *string { return &s.Answer })
	answerUsage = graph.Reduce(func(s *answerState) *llm.UsageByRole { return &s.Usage }, llm.UsageByRole.Merge)
)

// A node of one's own: its failed attempts reach the stream as FailedUsage,
// one each, and its error says what the last one spent.
func TestGenerateEmitsTheUsageOfEachFailedAttempt(t *testing.T) {
	m := fake.New(fake.Error(cutAfter(7, 3)), fake.Error(cutAfter(5, 1)), fake.Error(cutAfter(2, 2)))
	g := graph.New[answerState](answerField, answerUsage)
	g.AddNode("answer", nodes.Generate[answerState]{
		Model:  m,
		Role:   llm.RoleAnswer,
		Prompt: func(answerState) []schemas.Message { return []schemas.Message{schemas.UserMessage("q")} },
		Write: func(_ answerState, r *llm.Response) graph.Update[answerState] {
			return graph.Writes(answerField.Set(r.Content))
		},
		Usage: answerUsage,
	}.Node(), nodes.ModelRetry(fastRetry))
	g.AddEdge(graph.Start, "answer")
	g.AddEdge("answer", graph.End)
	c, err := g.Compile()
	require.NoError(t, err)

	var failed []llm.UsageByRole
	var runErr error
	for ev, err := range c.Stream(context.Background(), answerState{}) {
		if err != nil {
			runErr = err
			break
		}
		if fu, ok := ev.Value.(nodes.FailedUsage); ok && ev.Kind == graph.EventCustom {
			assert.Equal(t, "answer", ev.Node)
			failed = append(failed, fu.Usage)
		}
	}
	require.ErrorIs(t, runErr, llm.ErrStreamBroken)
	var ue *llm.UsageError
	require.True(t, errors.As(runErr, &ue))
	assert.Equal(t, llm.UsageByRole{llm.RoleAnswer: {Calls: 1, Failed: 1, Usage: llm.Usage{PromptTokens: 2, CompletionTokens: 2}}}, ue.Usage)
	require.Len(t, failed, 3, "one per attempt")
	assert.Equal(t, 7, failed[0][llm.RoleAnswer].Usage.PromptTokens)
	assert.Equal(t, 5, failed[1][llm.RoleAnswer].Usage.PromptTokens)
}

func TestFailWithUsageAddsToAnEarlierUsageError(t *testing.T) {
	base := errors.New("boom")
	inner := nodes.FailWithUsage(context.Background(), base, llm.UsageFor(llm.RoleAnswer, llm.Usage{PromptTokens: 2}))
	outer := nodes.FailWithUsage(context.Background(), fmt.Errorf("step: %w", inner), llm.UsageFor("compaction", llm.Usage{PromptTokens: 3}))
	assert.ErrorIs(t, outer, base)
	assert.Equal(t, "step: boom", outer.Error())
	assert.Equal(t, llm.UsageByRole{llm.RoleAnswer: {Calls: 1, Usage: llm.Usage{PromptTokens: 2}}, "compaction": {Calls: 1, Usage: llm.Usage{PromptTokens: 3}}}, llm.UsageOfError(outer))
	assert.Same(t, base, nodes.FailWithUsage(context.Background(), base, nil), "nothing spent: err as it was")
	assert.NoError(t, nodes.FailWithUsage(context.Background(), nil, llm.UsageFor(llm.RoleAnswer, llm.Usage{})))
}

func TestFlowCountsTheTokensOfFailedPlannerCalls(t *testing.T) {
	refused := &llm.APIError{Provider: "fake", Status: 400, Message: "context too long", Usage: llm.Usage{PromptTokens: 11, CompletionTokens: 4}}
	planner := fake.New(
		fake.Error(cutAfter(7, 3)), // the plan, retried
		planCall("create", "T", "Do it").WithTokens(50, 10),
		fake.Error(refused), // the summary fails the run
	)
	f := newFlow(t, nodes.FlowConfig{Planner: planner, ModelRetry: fastRetry}, &recorder{name: "writer"})
	res, err := f.Run(context.Background(), "task", nil)
	require.ErrorIs(t, err, llm.ErrBadRequest)
	require.NotNil(t, res)
	assert.Equal(t, llm.Tally{Calls: 3, Failed: 2, Usage: llm.Usage{PromptTokens: 68, CompletionTokens: 17, TotalTokens: 60}}, res.Usage[nodes.RolePlanner])
}
