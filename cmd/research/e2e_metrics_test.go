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
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/deepgraph/deepgraph/telemetry"
)

// metricsCollector is an OTLP/HTTP receiver that keeps the metrics the
// binary exports.
type metricsCollector struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []*colmetrics.ExportMetricsServiceRequest
}

func newMetricsCollector(t *testing.T) *metricsCollector {
	t.Helper()
	c := &metricsCollector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/metrics" {
			req := &colmetrics.ExportMetricsServiceRequest{}
			if err := proto.Unmarshal(body, req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			c.mu.Lock()
			c.got = append(c.got, req)
			c.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// metrics returns every metric received, in order.
func (c *metricsCollector) metrics() []*metricspb.Metric {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*metricspb.Metric
	for _, req := range c.got {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				out = append(out, sm.Metrics...)
			}
		}
	}
	return out
}

// otlpAttr is the string value of key among kvs, or "".
func otlpAttr(kvs []*common.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// runsByKindStatus counts deepgraph.runs by "kind status".
func runsByKindStatus(ms []*metricspb.Metric) map[string]int64 {
	runs := map[string]int64{}
	for _, m := range ms {
		if m.Name == telemetry.MetricRuns {
			for _, p := range m.GetSum().DataPoints {
				runs[otlpAttr(p.Attributes, "deepgraph.run.kind")+" "+otlpAttr(p.Attributes, "deepgraph.run.status")] += p.GetAsInt()
			}
		}
	}
	return runs
}

// TestE2EMetricsOverOTLP runs research with an OTLP endpoint set and no
// trace file: the collector gets the run's metrics at exit — its status,
// the model calls and tokens by role, the searches, and what it cost.
func TestE2EMetricsOverOTLP(t *testing.T) {
	t.Parallel()
	_, _, _, vars := searchSetup(t)
	collector := newMetricsCollector(t)
	vars["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.srv.URL
	vars["OTEL_TRACES_EXPORTER"] = "none"
	res := run(t, env(t, vars), "--allow-private-urls", "--model", "openai:gpt-4.1-mini", "--loops", "1",
		"How does Raft elect a leader? secret-question-words")
	require.Equal(t, 0, res.code, res)

	ms := collector.metrics()
	require.NotEmpty(t, ms, "the metrics are flushed at exit")
	calls := map[string]int64{}
	var searches int64
	var usd float64
	tokens := map[string]float64{}
	for _, m := range ms {
		switch m.Name {
		case telemetry.MetricModelCalls:
			for _, p := range m.GetSum().DataPoints {
				calls[otlpAttr(p.Attributes, "deepgraph.role")] += p.GetAsInt()
			}
		case telemetry.MetricSearchCalls:
			for _, p := range m.GetSum().DataPoints {
				searches += p.GetAsInt()
			}
		case telemetry.MetricTokenUsage:
			for _, p := range m.GetHistogram().DataPoints {
				tokens[otlpAttr(p.Attributes, "gen_ai.token.type")] += p.GetSum()
			}
		case telemetry.MetricCost:
			for _, p := range m.GetSum().DataPoints {
				assert.Equal(t, "gpt-4.1-mini", otlpAttr(p.Attributes, "gen_ai.request.model"))
				usd += p.GetAsDouble()
			}
		}
	}
	assert.Equal(t, map[string]int64{"research done": 1}, runsByKindStatus(ms))
	for _, role := range []string{"query", "research", "reflection", "answer"} {
		assert.Positive(t, calls[role], "model calls of role %s", role)
	}
	assert.Positive(t, searches)
	assert.Positive(t, tokens["input"])
	assert.Positive(t, tokens["output"])
	assert.Positive(t, usd, "gpt-4.1-mini has a known price")
}
