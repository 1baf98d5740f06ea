package server

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
)

// worldPrices price the world's model: $1000 per million prompt tokens,
// $2000 per million completion tokens.
var worldPrices = llm.Prices{"fake:world": {Input: 1000, Output: 2000, CachedInput: 1000}}

// costOfDoc is the cost of a run's JSON document.
func costOfDoc(t *testing.T, doc []byte) (total json.RawMessage, roles map[string]json.RawMessage) {
	t.Helper()
	var d struct {
		Cost struct {
			TotalUSD json.RawMessage            `json:"total_usd"`
			ByRole   map[string]json.RawMessage `json:"by_role"`
		} `json:"cost"`
	}
	require.NoError(t, json.Unmarshal(doc, &d), string(doc))
	return d.Cost.TotalUSD, d.Cost.ByRole
}

// A served research run is priced with the engine's prices (the config
// file's): in its report, and in its stored record.
func TestResearchRunCost(t *testing.T) {
	eng := newEngine(world{})
	eng.prices = worldPrices
	ts := startTestServer(t, t.TempDir()+"/runs.db", eng)
	run := ts.ask(RunRequest{Input: "How do checkpoints work?", Effort: "low"})
	done := ts.waitRun(run, runstore.StatusDone)
	require.Equal(t, 4, done.Calls)

	// query 100+20, research 500+40, reflection 300+30, answer 900+60
	// tokens: 1800 prompt and 150 completion tokens.
	const want = 1800*1000/1e6 + 150*2000/1e6
	total, roles := costOfDoc(t, done.Report)
	var usd float64
	require.NoError(t, json.Unmarshal(total, &usd), string(total))
	assert.InDelta(t, want, usd, 1e-9, "the report is priced at the config's prices")
	assert.Len(t, roles, 4)

	stored, err := ts.store.Runs.Get(t.Context(), run.ID)
	require.NoError(t, err)
	require.NotNil(t, stored.Cost, "the run's cost is recorded")
	assert.InDelta(t, want, *stored.Cost, 1e-9)
}

// Without a price for its model, a served run's cost is unknown: null in
// the report and in the record, never 0.
func TestResearchRunCostUnknown(t *testing.T) {
	ts := newTestServer(t, world{})
	run := ts.ask(RunRequest{Input: "How do checkpoints work?", Effort: "low"})
	done := ts.waitRun(run, runstore.StatusDone)
	total, _ := costOfDoc(t, done.Report)
	assert.JSONEq(t, "null", string(total))
	stored, err := ts.store.Runs.Get(t.Context(), run.ID)
	require.NoError(t, err)
	assert.Positive(t, stored.Tokens)
	assert.Nil(t, stored.Cost)
}

// A served agent run is priced with the engine's prices too.
func TestAgentRunCost(t *testing.T) {
	eng := newEngine(world{})
	eng.prices = worldPrices
	eng.agentScript = fake.New(
		fake.ToolCalls(fake.ToolCall("terminate", map[string]string{"status": "success", "answer": "Done."})).WithTokens(1000, 100),
	)
	ts := startTestServer(t, t.TempDir()+"/runs.db", eng)
	run := ts.ask(RunRequest{Kind: "agent", Input: "Finish"})
	done := ts.waitRun(run, runstore.StatusDone)
	const want = 1000*1000/1e6 + 100*2000/1e6
	total, _ := costOfDoc(t, done.Report)
	var usd float64
	require.NoError(t, json.Unmarshal(total, &usd), string(total))
	assert.InDelta(t, want, usd, 1e-9)
	stored, err := ts.store.Runs.Get(t.Context(), run.ID)
	require.NoError(t, err)
	require.NotNil(t, stored.Cost)
	assert.InDelta(t, want, *stored.Cost, 1e-9)
}

// The API's Run carries the run's cost: cost_usd, a number when every
// model's price is known, null when one is not (never 0), in one run and
// in lists; the OpenAPI document says so.
func TestRunShowsCost(t *testing.T) {
	eng := newEngine(world{})
	eng.prices = worldPrices
	eng.agentScript = fake.New(
		fake.ToolCalls(fake.ToolCall("terminate", map[string]string{"status": "success", "answer": "Done."})).WithTokens(1000, 100),
	)
	ts := startTestServer(t, t.TempDir()+"/runs.db", eng)
	priced := ts.waitRun(ts.ask(RunRequest{Kind: "agent", Input: "Finish"}), runstore.StatusDone)
	const want = 1000*1000/1e6 + 100*2000/1e6
	require.NotNil(t, priced.CostUSD, "a priced run shows its cost")
	assert.InDelta(t, want, *priced.CostUSD, 1e-9)

	unpriced := newTestServer(t, world{})
	unknown := unpriced.ask(RunRequest{Input: "How do checkpoints work?", Effort: "low"})
	unpriced.waitRun(unknown, runstore.StatusDone)
	_, body, _ := unpriced.do("GET", "/threads/"+unknown.ThreadID+"/runs/"+unknown.ID, nil)
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &raw))
	assert.JSONEq(t, "null", string(raw["cost_usd"]), "an unknown cost is null, never 0")

	list := call[RunList](ts, "GET", "/threads/"+priced.ThreadID+"/runs", nil, 200)
	require.Len(t, list.Runs, 1)
	require.NotNil(t, list.Runs[0].CostUSD, "listed runs show their cost too")
	assert.InDelta(t, want, *list.Runs[0].CostUSD, 1e-9)

	_, data, _ := ts.do("GET", "/openapi.json", nil)
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(data, &doc))
	var runSchema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(doc.Components.Schemas["Run"], &runSchema))
	costSchema, ok := runSchema.Properties["cost_usd"]
	require.True(t, ok, "the Run schema documents cost_usd")
	var prop struct {
		Type any `json:"type"`
	}
	require.NoError(t, json.Unmarshal(costSchema, &prop), string(costSchema))
	assert.ElementsMatch(t, []any{"null", "number"}, prop.Type, "cost_usd is a nullable number")
}
