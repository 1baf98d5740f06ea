package research_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/schemas"
)

// modelBackend researches by asking the model it is given: "research: <query>".
type modelBackend struct{}

func (modelBackend) Name() string { return "model" }

func (modelBackend) Research(ctx context.Context, model llm.Model, q research.Query) (research.Finding, error) {
	resp, err := model.Generate(ctx, []schemas.Message{schemas.UserMessage("research: " + q.Text)})
	if err != nil {
		return research.Finding{}, err
	}
	return research.Finding{Summary: resp.Content}, nil
}

// cutAfter is a stream cut off after its 200, the provider having reported
// prompt and completion tokens by then.
func cutAfter(prompt, completion int) *llm.APIError {
	return &llm.APIError{Provider: "fake", Message: "the event stream broke off",
		Err: fmt.Errorf("%w: connection reset", llm.ErrStreamBroken), Usage: llm.Usage{PromptTokens: prompt, CompletionTokens: completion}}
}

var fastRetry = &graph.RetryPolicy{InitialInterval: time.Millisecond}

func TestRetriedAttemptsTokensCountInTheReport(t *testing.T) {
	m := fake.New(
		queries("a").WithTokens(100, 10),
		fake.Error(cutAfter(7, 3)).When(fake.Contains("research: a")),
		fake.Text("facts about a").When(fake.Contains("research: a")).WithTokens(20, 5),
		reflection(true, "").WithTokens(30, 6),
		fake.Text("final").When(fake.Contains("well-researched answer")).WithTokens(40, 8),
	)
	rep, err := newResearcher(t, m, modelBackend{}, research.Config{ModelRetry: fastRetry}).Run(context.Background(), "question")
	require.NoError(t, err)
	assert.Equal(t, "final", rep.Answer)
	require.Zero(t, m.Remaining())

	got := rep.Usage[llm.RoleResearch]
	assert.Equal(t, 2, got.Calls, "the failed attempt and its retry")
	assert.Equal(t, 1, got.Failed)
	assert.Equal(t, 27, got.Usage.PromptTokens, "20 of the retry and 7 of the cut stream")
	assert.Equal(t, 8, got.Usage.CompletionTokens)
	// Counted once each: the other roles are as the calls reported.
	assert.Equal(t, llm.Tally{Calls: 1, Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}}, rep.Usage[llm.RoleQuery])
	assert.Equal(t, llm.Tally{Calls: 1, Usage: llm.Usage{PromptTokens: 30, CompletionTokens: 6, TotalTokens: 36}}, rep.Usage[llm.RoleReflection])
	assert.Equal(t, llm.Tally{Calls: 1, Usage: llm.Usage{PromptTokens: 40, CompletionTokens: 8, TotalTokens: 48}}, rep.Usage[llm.RoleAnswer])
	assert.Equal(t, 5, rep.Usage.Total().Calls)
}

func TestFailedFinalAnswerTokensCountInTheIncompleteReport(t *testing.T) {
	refused := &llm.APIError{Provider: "fake", Status: 400, Message: "context too long",
		Usage: llm.Usage{PromptTokens: 11, CompletionTokens: 4}}
	m := fake.New(
		queries("a").WithTokens(100, 10),
		reflection(true, "").WithTokens(30, 6),
		fake.Error(refused).When(fake.Contains("well-researched answer")),
	)
	rep, err := newResearcher(t, m, &scripted{}, research.Config{ModelRetry: fastRetry}).Run(context.Background(), "question")
	require.ErrorIs(t, err, llm.ErrBadRequest, "the error still matches what the provider said")
	require.NotNil(t, rep)
	assert.True(t, rep.Incomplete)
	assert.Equal(t, llm.Tally{Calls: 1, Failed: 1, Usage: llm.Usage{PromptTokens: 11, CompletionTokens: 4}}, rep.Usage[llm.RoleAnswer])
	assert.Equal(t, 100, rep.Usage[llm.RoleQuery].Usage.PromptTokens)
	assert.Equal(t, 3, rep.Usage.Total().Calls)

	// The error says what the failed step spent, for callers without the report.
	var apiErr *llm.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, llm.UsageByRole{llm.RoleAnswer: {Calls: 1, Failed: 1, Usage: llm.Usage{PromptTokens: 11, CompletionTokens: 4}}}, llm.UsageOfError(err))
}

func TestEveryFailedAttemptCountsWhenRetriesRunOut(t *testing.T) {
	m := fake.New(
		queries("a").WithTokens(100, 10),
		reflection(true, "").WithTokens(30, 6),
		fake.Error(cutAfter(5, 1)).When(fake.Contains("well-researched answer")),
		fake.Error(cutAfter(5, 2)).When(fake.Contains("well-researched answer")),
		fake.Error(cutAfter(5, 3)).When(fake.Contains("well-researched answer")),
	)
	rep, err := newResearcher(t, m, &scripted{}, research.Config{ModelRetry: fastRetry}).Run(context.Background(), "question")
	require.ErrorIs(t, err, llm.ErrStreamBroken)
	require.Zero(t, m.Remaining(), "three attempts")
	assert.Equal(t, llm.Tally{Calls: 3, Failed: 3, Usage: llm.Usage{PromptTokens: 15, CompletionTokens: 6}}, rep.Usage[llm.RoleAnswer])
}
