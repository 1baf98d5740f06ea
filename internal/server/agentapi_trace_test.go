package server

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/telemetry"
)

// tracedServer is a test server whose telemetry exports spans to exp.
func tracedServer(t *testing.T, opts ...serverOption) (*testServer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tel := telemetry.New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), telemetry.Options{})
	return newTestServer(t, world{}, append(opts, func(o *Options, _ *testEngine) { o.Telemetry = tel })...), exp
}

// waitSpan waits for the span named name to end.
func waitSpan(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	var s tracetest.SpanStub
	require.Eventually(t, func() bool {
		s = find(exp.GetSpans(), name)
		return s.Name != ""
	}, 30*time.Second, 10*time.Millisecond, "span %s ends", name)
	return s
}

// The Agent Server API's requests are server spans named by their route,
// continuing a caller's trace; a run is a trace of its own, linked to the
// request that created it, whose root holds the run's graph spans and
// its final status.
func TestAgentAPIRequestsAndRunsAreTraced(t *testing.T) {
	ts, exp := tracedServer(t)
	const (
		callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		callerSpan  = "00f067aa0ba902b7"
	)
	th := ts.newThread()
	status, body, _ := ts.do("POST", "/threads/"+th.ThreadID+"/runs/wait", map[string]any{"assistant_id": "research",
		"input": map[string]any{"messages": []map[string]string{{"type": "human", "content": "How do checkpoints work?"}}}},
		"traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
	require.Equal(t, 200, status, "%s", body)
	root := waitSpan(t, exp, "run research")
	runs := lgCall[[]lgRun](ts, "GET", "/threads/"+th.ThreadID+"/runs", nil, 200)
	require.Len(t, runs, 1)
	spans := exp.GetSpans()

	req := find(spans, "POST /threads/{thread_id}/runs/wait")
	require.NotEmpty(t, req.Name, "a server span per API request, named by its route")
	assert.Equal(t, trace.SpanKindServer, req.SpanKind)
	assert.Equal(t, callerTrace, req.SpanContext.TraceID().String(), "the request continues the caller's trace (traceparent)")
	assert.Equal(t, callerSpan, req.Parent.SpanID().String())
	for k, want := range map[string]string{"http.request.method": "POST", "http.route": "/threads/{thread_id}/runs/wait", "http.response.status_code": "200"} {
		got, ok := spanAttr(req, k)
		assert.True(t, ok, k)
		assert.Equal(t, want, got, k)
	}

	assert.False(t, root.Parent.IsValid(), "a run is a trace of its own: it outlives its request")
	require.Len(t, root.Links, 1, "the run links to the request that started it")
	assert.Equal(t, req.SpanContext.SpanID(), root.Links[0].SpanContext.SpanID())
	id, _ := spanAttr(root, "graph.run_id")
	assert.Equal(t, runs[0].RunID, id)
	st, _ := spanAttr(root, "deepgraph.run.status")
	assert.Equal(t, "done", st, "the run's root span records its final status")
	assert.Equal(t, codes.Unset, root.Status.Code)
	var graphRuns, inRun int
	for _, s := range spans {
		if s.SpanContext.TraceID() != root.SpanContext.TraceID() || s.Name == "run research" {
			continue
		}
		inRun++
		if s.Name == "graph.run" {
			graphRuns++
			assert.Equal(t, root.SpanContext.SpanID(), s.Parent.SpanID(), "the graph run is a child of the run's root")
		}
	}
	assert.Equal(t, 1, graphRuns)
	assert.Greater(t, inRun, 3, "the run's steps, nodes and model calls are traced")

	status, _, _ = ts.do("GET", "/threads/"+th.ThreadID+"/runs/00000000-0000-4000-8000-000000000000", nil)
	require.Equal(t, 404, status)
	got, _ := spanAttr(find(exp.GetSpans(), "GET /threads/{thread_id}/runs/{run_id}"), "http.response.status_code")
	assert.Equal(t, "404", got)
}

// A failed run's root span says so: deepgraph.run.status failed and an
// error status with the reason.
func TestAgentAPIFailedRunSpanHasErrorStatus(t *testing.T) {
	ts, exp := tracedServer(t, func(_ *Options, e *testEngine) {
		e.agentScript = fake.New(fake.Error(fmt.Errorf("the provider refused the key: %w", llm.ErrAuth)))
	})
	th := ts.newThread()
	lgCall[json.RawMessage](ts, "POST", "/threads/"+th.ThreadID+"/runs/wait", map[string]any{"assistant_id": "agent",
		"input": map[string]any{"messages": []map[string]string{{"type": "human", "content": "Finish"}}}}, 200)
	root := waitSpan(t, exp, "run agent")
	st, _ := spanAttr(root, "deepgraph.run.status")
	assert.Equal(t, "failed", st)
	assert.Equal(t, codes.Error, root.Status.Code)
	assert.Contains(t, root.Status.Description, "refused the key")
}

// A run of the Agent Server API is counted in the metrics with its kind
// and final status, as a CLI run is.
func TestAgentAPIRunsAreMetered(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tel := telemetry.New(nil, telemetry.Options{MeterProvider: mp})
	ts := newTestServer(t, world{}, func(o *Options, _ *testEngine) { o.Telemetry = tel })
	th := ts.newThread()
	lgCall[json.RawMessage](ts, "POST", "/threads/"+th.ThreadID+"/runs/wait", map[string]any{"assistant_id": "research",
		"input": map[string]any{"messages": []map[string]string{{"type": "human", "content": "How do checkpoints work?"}}}}, 200)

	require.Eventually(t, func() bool { return metered(t, reader, "research", "done") }, 30*time.Second, 10*time.Millisecond,
		"deepgraph.runs counts the run as research, done")
}

// metered reports whether the metrics count one run of kind with status.
func metered(t *testing.T, reader sdkmetric.Reader, kind, status string) bool {
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == telemetry.MetricRuns {
				for _, p := range sum.DataPoints {
					k, _ := p.Attributes.Value("deepgraph.run.kind")
					st, _ := p.Attributes.Value("deepgraph.run.status")
					if k.Emit() == kind && st.Emit() == status && p.Value == 1 {
						return true
					}
				}
			}
		}
	}
	return false
}

func spanAttr(s tracetest.SpanStub, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit(), true
		}
	}
	return "", false
}

func find(spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	for _, s := range spans {
		if s.Name == name {
			return s
		}
	}
	return tracetest.SpanStub{}
}
