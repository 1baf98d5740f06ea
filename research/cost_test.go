package research_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/research"
)

// A run whose models share an llm.Spend stops at the first model call
// after its spend has reached the limit: the error says so, the report is
// marked incomplete and keeps what was spent.
func TestCostLimitStopsTheRun(t *testing.T) {
	m := fake.New(
		queries("euro 2024 winner"), // 120 tokens
		grounded("euro 2024 winner", "Spain won Euro 2024.", "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA", "uefa.com"), // 350
		reflection(true, ""),
	)
	spend := &llm.Spend{Limit: 400}
	model := llm.CostLimited(m, spend, llm.Price{Input: 1e6, Output: 1e6}) // $1 a token
	r, err := research.New(research.Config{QueryModel: model, Backend: research.GeminiBackend{KeepRedirects: true}, Now: fixedNow, InitialQueries: 1})
	require.NoError(t, err)

	rep, err := r.Run(context.Background(), "Who won Euro 2024?")
	require.ErrorIs(t, err, llm.ErrCostLimit)
	assert.Contains(t, err.Error(), "spent $470.00 of its $400.00 limit")
	require.NotNil(t, rep)
	assert.True(t, rep.Incomplete)
	assert.Equal(t, 1, m.Remaining(), "the reflection call was refused before it reached the model")
	assert.Equal(t, 470.0, spend.Spent())
	tot := rep.Usage.Total()
	assert.Equal(t, 470, tot.Usage.TotalTokens, "the report keeps the tokens of the calls that were made")
	c := llm.Prices(nil).CostOf(rep.Usage, func(string) string { return "gemini:gemini-2.5-flash" })
	usd, ok := c.Total()
	assert.True(t, ok)
	assert.Greater(t, usd, 0.0)
}
