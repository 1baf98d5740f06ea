package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/telemetry"
)

// TestE2EFlowMetrics runs research flow with an OTLP endpoint set: the
// collector gets one flow run with its status, and its cost by role —
// the planner's, the agent's and the researcher's calls.
func TestE2EFlowMetrics(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		blocked bool
		code    int
	}{
		{"completed", false, 0},
		{"partial is done: the flow ran to its summary", true, exitAgentFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			collector := newMetricsCollector(t)

			web, _ := newFakeWeb(t)
			sx := newFakeSearXNG(t, web.URL)
			ws := t.TempDir()
			oa := newFakeOpenAI(t, flowScript(t, ws, tc.blocked))
			vars := map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL(), "SEARXNG_URL": sx.srv.URL,
				"OTEL_EXPORTER_OTLP_ENDPOINT": collector.srv.URL, "OTEL_TRACES_EXPORTER": "none"}
			res := run(t, env(t, vars), "flow", "--model", "openai:gpt-4.1-mini", "--allow-private-urls", "--loops", "1", "--workspace", ws,
				"Research how Raft elects a leader and write notes to raft.md")
			require.Equal(t, tc.code, res.code, res)

			ms := collector.metrics()
			usd := map[string]float64{}
			for _, m := range ms {
				if m.Name == telemetry.MetricCost {
					for _, p := range m.GetSum().DataPoints {
						assert.Equal(t, "gpt-4.1-mini", otlpAttr(p.Attributes, "gen_ai.request.model"))
						usd[otlpAttr(p.Attributes, "deepgraph.role")] += p.GetAsDouble()
					}
				}
			}
			assert.Equal(t, map[string]int64{"flow done": 1}, runsByKindStatus(ms))
			for _, role := range []string{"planner", "agent", "query", "reflection", "answer"} {
				assert.Positive(t, usd[role], "cost of role %s", role)
			}
		})
	}
}
