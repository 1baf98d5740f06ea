package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCost is a run of research runs --format json, with its cost.
type runCost struct {
	ID      string          `json:"id"`
	Status  string          `json:"status"`
	Tokens  int64           `json:"tokens"`
	CostUSD json.RawMessage `json:"cost_usd"`
}

// listRuns runs research runs --format json in the environment e.
func listRuns(t *testing.T, e []string) []runCost {
	t.Helper()
	list := run(t, e, "runs", "--format", "json")
	require.Equal(t, 0, list.code, list)
	var runs []runCost
	require.NoError(t, json.Unmarshal([]byte(list.stdout), &runs), list.stdout)
	return runs
}

// TestE2ERunsShowCost: research runs shows what each finished run cost, at
// the config's prices when it gives them, and "unknown" (JSON null) for a
// model without a price.
func TestE2ERunsShowCost(t *testing.T) {
	t.Parallel()
	_, _, _, vars := searchSetup(t)
	e := env(t, vars)
	res := run(t, e, "--model", "openai:gpt-4.1-mini", "--effort", "low", "Raft?")
	require.Equal(t, 0, res.code, res)
	listed := run(t, e, "runs")
	require.Equal(t, 0, listed.code, listed)
	// 4 calls of 100 prompt + 30 completion tokens at gpt-4.1-mini's list
	// price ($0.40 and $1.60 per million): $0.000352.
	assert.Regexp(t, `ID\s+STARTED\s+STATUS\s+TOKENS\s+COST\s+DURATION\s+QUESTION\n`, listed.stdout)
	assert.Regexp(t, runIDOf(t, res.stderr)+`\s+\S+ \S+\s+done\s+520\s+\$0\.0004\s+\S+\s+Raft\?\n`, listed.stdout)
	runs := listRuns(t, e)
	require.Len(t, runs, 1)
	assert.Equal(t, int64(520), runs[0].Tokens)
	var usd float64
	require.NoError(t, json.Unmarshal(runs[0].CostUSD, &usd), string(runs[0].CostUSD))
	assert.InDelta(t, 0.000352, usd, 1e-12)

	// The config's prices win, in the stored cost too.
	vars["DEEPGRAPH_PRICES"] = expensivePrices
	e = env(t, vars)
	res = run(t, e, "--model", "openai:gpt-4.1-mini", "--effort", "low", "Raft?")
	require.Equal(t, 0, res.code, res)
	listed = run(t, e, "runs")
	assert.Regexp(t, runIDOf(t, res.stderr)+`\s+\S+ \S+\s+done\s+520\s+\$0\.5200\s+`, listed.stdout)
	runs = listRuns(t, e)
	require.Len(t, runs, 1)
	require.NoError(t, json.Unmarshal(runs[0].CostUSD, &usd), string(runs[0].CostUSD))
	assert.InDelta(t, 0.52, usd, 1e-9)

	// A model without a price: unknown, never $0.
	delete(vars, "DEEPGRAPH_PRICES")
	e = env(t, vars)
	res = run(t, e, "--model", "compatible:my-model", "--effort", "low", "Raft?")
	require.Equal(t, 0, res.code, res)
	listed = run(t, e, "runs")
	assert.Regexp(t, runIDOf(t, res.stderr)+`\s+\S+ \S+\s+done\s+520\s+unknown\s+`, listed.stdout)
	runs = listRuns(t, e)
	require.Len(t, runs, 1)
	assert.JSONEq(t, "null", string(runs[0].CostUSD))
}

// TestE2ERunsAgentCost: an agent run's cost is recorded when it finishes.
func TestE2ERunsAgentCost(t *testing.T) {
	t.Parallel()
	oa := newFakeOpenAI(t, agentScript(oaReply{Content: "All done."}))
	e := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL(), "DEEPGRAPH_PRICES": expensivePrices})
	res := run(t, e, "agent", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(), "Say done")
	require.Equal(t, 0, res.code, res)
	runs := listRuns(t, e)
	require.Len(t, runs, 1)
	var usd float64
	require.NoError(t, json.Unmarshal(runs[0].CostUSD, &usd), string(runs[0].CostUSD))
	assert.InDelta(t, float64(runs[0].Tokens)*1000/1e6, usd, 1e-9, "every token at $1000 per million")
	assert.Positive(t, usd)
}
