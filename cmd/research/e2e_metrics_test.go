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

// TestE2EMetricsOverOTLP runs research with an OTLP endpoint set and no
// trace file: the collector gets the run's metrics at exit — its status,
// the model calls and tokens by role, the searches, and what it cost.
func TestE2EMetricsOverOTLP(t *testing.T) {
	_, _, _, vars := searchSetup(t)
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
	vars["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.URL
	vars["OTEL_TRACES_EXPORTER"] = "none"
	res := run(t, env(t, vars), "--allow-private-urls", "--model", "openai:gpt-4.1-mini", "--loops", "1",
		"How does Raft elect a leader? secret-question-words")
	require.Equal(t, 0, res.code, res)

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, got, "the metrics are flushed at exit")
	runs := map[string]int64{}
	calls := map[string]int64{}
	var searches int64
	var usd float64
	tokens := map[string]float64{}
	attr := func(kvs []*common.KeyValue, key string) string {
		for _, kv := range kvs {
			if kv.Key == key {
				return kv.Value.GetStringValue()
			}
		}
		return ""
	}
	for _, req := range got {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					switch m.Name {
					case telemetry.MetricRuns:
						for _, p := range m.GetSum().DataPoints {
							runs[attr(p.Attributes, "deepgraph.run.kind")+" "+attr(p.Attributes, "deepgraph.run.status")] += p.GetAsInt()
						}
					case telemetry.MetricModelCalls:
						for _, p := range m.GetSum().DataPoints {
							calls[attr(p.Attributes, "deepgraph.role")] += p.GetAsInt()
						}
					case telemetry.MetricSearchCalls:
						for _, p := range m.GetSum().DataPoints {
							searches += p.GetAsInt()
						}
					case telemetry.MetricTokenUsage:
						for _, p := range m.GetHistogram().DataPoints {
							tokens[attr(p.Attributes, "gen_ai.token.type")] += p.GetSum()
						}
					case telemetry.MetricCost:
						for _, p := range m.GetSum().DataPoints {
							assert.Equal(t, "gpt-4.1-mini", attr(p.Attributes, "gen_ai.request.model"))
							usd += p.GetAsDouble()
						}
					}
				}
			}
		}
	}
	assert.Equal(t, map[string]int64{"research done": 1}, runs)
	for _, role := range []string{"query", "research", "reflection", "answer"} {
		assert.Positive(t, calls[role], "model calls of role %s", role)
	}
	assert.Positive(t, searches)
	assert.Positive(t, tokens["input"])
	assert.Positive(t, tokens["output"])
	assert.Positive(t, usd, "gpt-4.1-mini has a known price")
}
