package llm_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/schemas"
)

func TestPriceCost(t *testing.T) {
	p := llm.Price{Input: 1, Output: 10, CachedInput: 0.1, CacheWrite: 1.25}
	for _, tc := range []struct {
		name string
		u    llm.Usage
		want float64
	}{
		{"nothing", llm.Usage{}, 0},
		{"uncached input", llm.Usage{PromptTokens: 1_000_000}, 1},
		{"cached input priced apart", llm.Usage{PromptTokens: 1_000_000, CachedTokens: 400_000}, 0.6 + 0.04},
		{"all cached", llm.Usage{PromptTokens: 500_000, CachedTokens: 500_000}, 0.05},
		{"cached above prompt is capped", llm.Usage{PromptTokens: 100, CachedTokens: 1000}, 100 * 0.1 / 1e6},
		{"output", llm.Usage{CompletionTokens: 200_000}, 2},
		{"openai: reasoning inside the completion", llm.Usage{PromptTokens: 1000, CompletionTokens: 500, TotalTokens: 1500, ReasoningTokens: 300}, (1000*1 + 500*10) / 1e6},
		{"gemini: thinking outside the completion", llm.Usage{PromptTokens: 1000, CompletionTokens: 500, TotalTokens: 1800, ReasoningTokens: 300}, (1000*1 + 800*10) / 1e6},
		{"all three", llm.Usage{PromptTokens: 2_000_000, CachedTokens: 1_000_000, CompletionTokens: 100_000, TotalTokens: 2_100_000}, 1 + 0.1 + 1},
		{"cache writes priced apart", llm.Usage{PromptTokens: 1_000_000, CachedTokens: 200_000, CacheWriteTokens: 300_000}, 0.5 + 0.02 + 0.375},
		{"writes above the uncached prompt are capped", llm.Usage{PromptTokens: 100, CachedTokens: 60, CacheWriteTokens: 1000}, (60*0.1 + 40*1.25) / 1e6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, p.Cost(tc.u), 1e-12)
		})
	}
}

func TestPriceFor(t *testing.T) {
	for _, tc := range []struct {
		spec  string
		known bool
		want  llm.Price
	}{
		{"gemini:gemini-2.5-flash", true, llm.Price{Input: 0.30, Output: 2.50, CachedInput: 0.03, CacheWrite: 0.30}},
		{"google:gemini-2.5-pro", true, llm.Price{Input: 1.25, Output: 10, CachedInput: 0.125, CacheWrite: 1.25}},
		{"openai:gpt-4.1-mini", true, llm.Price{Input: 0.40, Output: 1.60, CachedInput: 0.10, CacheWrite: 0.40}},
		{"openai:gpt-4.1-mini-2025-04-14", true, llm.Price{Input: 0.40, Output: 1.60, CachedInput: 0.10, CacheWrite: 0.40}},
		{"openai:gpt-4o-mini", true, llm.Price{Input: 0.15, Output: 0.60, CachedInput: 0.075, CacheWrite: 0.15}},
		{"anthropic:claude-sonnet-4-5", true, llm.Price{Input: 3, Output: 15, CachedInput: 0.30, CacheWrite: 3.75}},
		{"claude:claude-sonnet-4-5-20250929", true, llm.Price{Input: 3, Output: 15, CachedInput: 0.30, CacheWrite: 3.75}},
		{"ollama:qwen3:8b", true, llm.Price{}},
		{"compatible:deepseek-chat", false, llm.Price{}},
		{"openai:gpt-9-ultra", false, llm.Price{}},
		{"gemini:gemini-2.5-flash-preview", false, llm.Price{}},
		{"not a spec", false, llm.Price{}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got, ok := llm.PriceFor(tc.spec)
			assert.Equal(t, tc.known, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestPricesOverrideWins(t *testing.T) {
	over := llm.Prices{
		"openai:gpt-4.1-mini":   {Input: 1, Output: 2, CachedInput: 0.5},
		"compatible:my-model":   {Input: 0.2, Output: 0.2},
		"google:gemini-2.5-pro": {Input: 9, Output: 9, CachedInput: 9},
	}
	got, ok := over.For("openai:gpt-4.1-mini")
	assert.True(t, ok)
	assert.Equal(t, llm.Price{Input: 1, Output: 2, CachedInput: 0.5}, got)
	got, ok = over.For("compatible:my-model")
	assert.True(t, ok, "an unknown model becomes known when the config prices it")
	assert.Equal(t, 0.2, got.Input)
	got, ok = over.For("gemini:gemini-2.5-pro")
	assert.True(t, ok, "specs match through provider aliases")
	assert.Equal(t, 9.0, got.Output)
	got, ok = over.For("gemini:gemini-2.5-flash")
	assert.True(t, ok, "models not overridden keep the built-in price")
	assert.Equal(t, 0.30, got.Input)
	_, ok = llm.Prices(nil).For("compatible:my-model")
	assert.False(t, ok)
}

func TestCostOf(t *testing.T) {
	usage := llm.UsageByRole{
		llm.RoleQuery:  {Calls: 1, Usage: llm.Usage{PromptTokens: 1_000_000, CompletionTokens: 100_000, TotalTokens: 1_100_000}},
		llm.RoleAnswer: {Calls: 2, Failed: 1, Usage: llm.Usage{PromptTokens: 1000}},
		llm.RoleAgent:  {}, // no calls: left out
	}
	specs := map[string]string{llm.RoleQuery: "openai:gpt-4.1-mini", llm.RoleAnswer: "compatible:x"}
	c := llm.Prices(nil).CostOf(usage, func(r string) string { return specs[r] })
	require.Len(t, c.ByRole, 2)
	assert.InDelta(t, 0.40+0.16, c.ByRole[llm.RoleQuery].USD, 1e-12)
	assert.True(t, c.ByRole[llm.RoleQuery].Known)
	assert.False(t, c.ByRole[llm.RoleAnswer].Known)
	assert.Equal(t, []string{llm.RoleAnswer}, c.Unknown)
	usd, ok := c.Total()
	assert.False(t, ok, "a total with an unknown price is not a total")
	assert.InDelta(t, 0.56, usd, 1e-12)
	assert.Equal(t, "$0.5600 + unknown (compatible:x)", c.String())

	c = llm.Prices{"compatible:x": {Input: 10}}.CostOf(usage, func(r string) string { return specs[r] })
	usd, ok = c.Total()
	assert.True(t, ok)
	assert.InDelta(t, 0.56+0.01, usd, 1e-12)
	assert.Equal(t, "$0.5700", c.String())

	c = llm.Prices(nil).CostOf(llm.UsageByRole{"x": {Calls: 1}}, func(string) string { return "" })
	assert.Equal(t, "unknown", c.String(), "unknown prices say unknown, never $0")
	c = llm.Prices(nil).CostOf(llm.UsageByRole{"x": {Calls: 1, Usage: llm.Usage{PromptTokens: 5}}}, func(string) string { return "ollama:qwen3:8b" })
	assert.Equal(t, "$0.0000", c.String(), "a local model is free")
	assert.Equal(t, "$12.35", llm.USD(12.345))
}

func TestCostLimited(t *testing.T) {
	price := llm.Price{Input: 1_000_000, Output: 1_000_000} // $1 a token
	model := fake.New(
		fake.Text("a").WithUsage(llm.Usage{PromptTokens: 1}),
		fake.Text("b").WithUsage(llm.Usage{PromptTokens: 1}),
		fake.Text("c"),
	)
	spend := &llm.Spend{Limit: 2}
	m := llm.CostLimited(model, spend, price)
	ctx := context.Background()
	msgs := []schemas.Message{schemas.UserMessage("hi")}
	_, err := m.Generate(ctx, msgs)
	require.NoError(t, err)
	_, err = m.Generate(ctx, msgs) // $1 spent < $2: allowed
	require.NoError(t, err)
	assert.Equal(t, 2.0, spend.Spent())
	_, err = m.Generate(ctx, msgs) // $2 spent: the limit is reached
	require.ErrorIs(t, err, llm.ErrCostLimit)
	var ce *llm.CostLimitError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, 2.0, ce.Spent)
	assert.Contains(t, err.Error(), "$2.00 of its $2.00 limit")
	assert.Equal(t, 2, len(model.Calls()), "the refused call never reached the model")
}

func TestFailedCallTokensCount(t *testing.T) {
	cut := &llm.APIError{Provider: "openai", Message: "stream cut", Err: llm.ErrStreamBroken,
		Usage: llm.Usage{PromptTokens: 1000, CompletionTokens: 10, TotalTokens: 1010}}
	model := fake.New(fake.Error(cut))
	meter := new(llm.Meter)
	spend := &llm.Spend{}
	m := llm.Metered(llm.CostLimited(model, spend, llm.Price{Input: 1, Output: 1}), meter, llm.RoleAnswer)
	_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
	require.Error(t, err)
	got := meter.Snapshot()[llm.RoleAnswer]
	assert.Equal(t, llm.Tally{Calls: 1, Failed: 1, Usage: cut.Usage}, got)
	assert.False(t, math.Abs(spend.Spent()-1010/1e6) > 1e-12, "spent %v", spend.Spent())
}
