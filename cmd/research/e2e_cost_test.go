package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every call of the fake OpenAI server reports 100 prompt and 30 completion
// tokens: 130 tokens, $0.13 at $1000 per million.
const expensivePrices = `{"openai:gpt-4.1-mini":{"input":1000,"output":1000,"cached_input":1000}}`

func TestE2ECostInTimelineAndReport(t *testing.T) {
	t.Parallel()
	_, _, _, vars := searchSetup(t)
	res := run(t, env(t, vars), "--model", "openai:gpt-4.1-mini", "--effort", "low", "Raft?")
	require.Equal(t, 0, res.code, res)
	// effort low: query, one research, reflection, answer = 4 calls of 100
	// prompt + 30 completion tokens at gpt-4.1-mini's list price.
	assert.Regexp(t, `Done in [0-9.]+s · 520 tokens · 4 LLM calls · .* · \$0\.0004\n`, res.stderr)

	vars["DEEPGRAPH_PRICES"] = expensivePrices
	res = run(t, env(t, vars), "--format", "json", "--model", "openai:gpt-4.1-mini", "--effort", "low", "Raft?")
	require.Equal(t, 0, res.code, res)
	var doc struct {
		Cost struct {
			Currency string   `json:"currency"`
			TotalUSD *float64 `json:"total_usd"`
			ByRole   map[string]struct {
				Model string   `json:"model"`
				USD   *float64 `json:"usd"`
			} `json:"by_role"`
			PricesAsOf string `json:"prices_as_of"`
		} `json:"cost"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res.stdout)
	assert.Equal(t, "USD", doc.Cost.Currency)
	require.NotNil(t, doc.Cost.TotalUSD)
	assert.InDelta(t, 0.52, *doc.Cost.TotalUSD, 1e-9, "the config's price wins over the built-in one")
	for _, role := range []string{"query", "research", "reflection", "answer"} {
		require.Contains(t, doc.Cost.ByRole, role)
		assert.Equal(t, "openai:gpt-4.1-mini", doc.Cost.ByRole[role].Model)
		require.NotNil(t, doc.Cost.ByRole[role].USD)
		assert.InDelta(t, 0.13, *doc.Cost.ByRole[role].USD, 1e-9, role)
	}
	assert.NotEmpty(t, doc.Cost.PricesAsOf)
}

func TestE2EUnknownPriceSaysUnknown(t *testing.T) {
	t.Parallel()
	_, _, _, vars := searchSetup(t)
	res := run(t, env(t, vars), "--format", "json", "--model", "compatible:my-model", "--effort", "low", "Raft?")
	require.Equal(t, 0, res.code, res)
	assert.Regexp(t, `Done in .* · unknown \(compatible:my-model\)\n`, res.stderr)
	var doc struct {
		Cost map[string]json.RawMessage `json:"cost"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res.stdout)
	assert.JSONEq(t, "null", string(doc.Cost["total_usd"]), "an unknown price is never 0")
	assert.JSONEq(t, `["answer","query","reflection","research"]`, string(doc.Cost["unknown"]))
	assert.Contains(t, string(doc.Cost["by_role"]), `"price": "unknown"`)

	// --max-cost cannot hold a run whose price is unknown: refused before
	// anything is spent.
	res = run(t, env(t, vars), "--max-cost", "1", "--model", "compatible:my-model", "Raft?")
	assert.Equal(t, 2, res.code, res)
	assert.Contains(t, res.stderr, "max_cost needs the price of every model of the run, and compatible:my-model")
}

func TestE2EMaxCostStopsTheRun(t *testing.T) {
	t.Parallel()
	oa, _, _, vars := searchSetup(t)
	vars["DEEPGRAPH_PRICES"] = expensivePrices
	// $0.13 a call: the query call ($0.13 < $0.20) and the research call
	// go; the reflection call would start at $0.26 ≥ $0.20 and is refused.
	res := run(t, env(t, vars), "--format", "json", "--max-cost", "0.20", "--model", "openai:gpt-4.1-mini", "--effort", "low", "Raft?")
	assert.Equal(t, 1, res.code, res)
	assert.Equal(t, 2, oa.count(), "no model call after the limit was reached")
	assert.Contains(t, res.stderr, "cost limit reached: the run has spent $0.2600 of its $0.2000 limit")
	assert.Regexp(t, `Stopped \(incomplete\) in .* · \$0\.2600\n`, res.stderr)
	var doc struct {
		Incomplete bool   `json:"incomplete"`
		Error      string `json:"error"`
		Cost       struct {
			TotalUSD *float64 `json:"total_usd"`
		} `json:"cost"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res.stdout)
	assert.True(t, doc.Incomplete)
	assert.Contains(t, doc.Error, "cost limit reached")
	require.NotNil(t, doc.Cost.TotalUSD)
	assert.InDelta(t, 0.26, *doc.Cost.TotalUSD, 1e-9)

	// A limit high enough lets the run finish.
	res = run(t, env(t, vars), "--max-cost", "5", "--model", "openai:gpt-4.1-mini", "--effort", "low", "Raft?")
	assert.Equal(t, 0, res.code, res)
}
