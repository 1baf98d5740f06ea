package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/deepgraph/deepgraph/telemetry"
)

// TestE2EFlowMetrics runs research flow with an OTLP endpoint set: the
// collector gets one flow run with its status, and its cost by role —
// the planner's, the agent's and the researcher's calls.
func TestE2EFlowMetrics(t *testing.T) {
	for _, tc := range []struct {
		name    string
		blocked bool
		code    int
	}{
		{"completed", false, 0},
		{"partial is done: the flow ran to its summary", true, exitAgentFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []*colmetrics.ExportMetricsServiceRequest
			collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if r.URL.Path == "/v1/metrics" {
					req := &colmetrics.ExportMetricsServiceRequest{}
					if err := proto.Unmarshal(body, req); err != nil {
						http.Error(w, err.Error(), http.StatusBadRequest)
						return
					}
					mu.Lock()
					got = append(got, req)
					mu.Unlock()
				}
				w.Header().Set("Content-Type", "application/x-protobuf")
			}))
			defer collector.Close()

			web, _ := newFakeWeb(t)
			sx := newFakeSearXNG(t, web.URL)
			ws := t.TempDir()
			oa := newFakeOpenAI(t, flowScript(t, ws, tc.blocked))
			vars := map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL(), "SEARXNG_URL": sx.srv.URL,
				"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "OTEL_TRACES_EXPORTER": "none"}
			res := run(t, env(t, vars), "flow", "--model", "openai:gpt-4.1-mini", "--allow-private-urls", "--loops", "1", "--workspace", ws,
				"Research how Raft elects a leader and write notes to raft.md")
			require.Equal(t, tc.code, res.code, res)

			mu.Lock()
			defer mu.Unlock()
			attr := func(kvs []*common.KeyValue, key string) string {
				for _, kv := range kvs {
					if kv.Key == key {
						return kv.Value.GetStringValue()
					}
				}
				return ""
			}
			runs := map[string]int64{}
			usd := map[string]float64{}
			for _, req := range got {
				for _, rm := range req.ResourceMetrics {
					for _, sm := range rm.ScopeMetrics {
						for _, m := range sm.Metrics {
							switch m.Name {
							case telemetry.MetricRuns:
								for _, p := range m.GetSum().DataPoints {
									runs[attr(p.Attributes, "deepgraph.run.kind")+" "+attr(p.Attributes, "deepgraph.run.status")] += p.GetAsInt()
								}
							case telemetry.MetricCost:
								for _, p := range m.GetSum().DataPoints {
									assert.Equal(t, "gpt-4.1-mini", attr(p.Attributes, "gen_ai.request.model"))
									usd[attr(p.Attributes, "deepgraph.role")] += p.GetAsDouble()
								}
							}
						}
					}
				}
			}
			assert.Equal(t, map[string]int64{"flow done": 1}, runs)
			for _, role := range []string{"planner", "agent", "query", "reflection", "answer"} {
				assert.Positive(t, usd[role], "cost of role %s", role)
			}
		})
	}
}
