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
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/telemetry"
)

func spanAttr(s tracetest.SpanStub, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit(), true
		}
	}
	return "", false
}

func TestRequestsAndRunsAreTraced(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel := telemetry.New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), telemetry.Options{})
	ts := newTestServer(t, world{}, func(o *Options, _ *testEngine) { o.Telemetry = tel })

	const (
		callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		callerSpan  = "00f067aa0ba902b7"
	)
	th := call[Thread](ts, "POST", "/threads", map[string]any{}, 201)
	status, body, _ := ts.do("POST", "/threads/"+th.ID+"/runs", RunRequest{Input: "How do checkpoints work?", Effort: "low"},
		"traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
	require.Equal(t, 202, status, "%s", body)
	var run Run
	require.NoError(t, json.Unmarshal(body, &run))
	ts.waitRun(run, runstore.StatusDone)

	// The event stream still flushes through the traced writer.
	resp := ts.stream(context.Background(), run, 0)
	evs := readSSE(t, resp.Body, nil)
	resp.Body.Close()
	require.NotEmpty(t, evs)
	assert.Equal(t, EventEnd, evs[len(evs)-1].Type)

	var root tracetest.SpanStub
	require.Eventually(t, func() bool {
		for _, s := range exp.GetSpans() {
			if s.Name == "run research" {
				root = s
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "the run's root span ends when the run does")
	spans := exp.GetSpans()

	var req tracetest.SpanStub
	for _, s := range spans {
		if s.Name == "POST /threads/{thread_id}/runs" {
			req = s
		}
	}
	require.Equal(t, "POST /threads/{thread_id}/runs", req.Name, "a server span per API request, named by its route")
	assert.Equal(t, trace.SpanKindServer, req.SpanKind)
	assert.Equal(t, callerTrace, req.SpanContext.TraceID().String(), "the request continues the caller's trace (traceparent)")
	assert.Equal(t, callerSpan, req.Parent.SpanID().String())
	for k, want := range map[string]string{"http.request.method": "POST", "http.route": "/threads/{thread_id}/runs", "http.response.status_code": "202"} {
		got, ok := spanAttr(req, k)
		assert.True(t, ok, k)
		assert.Equal(t, want, got, k)
	}

	assert.False(t, root.Parent.IsValid(), "a run is a trace of its own: it outlives its request")
	require.Len(t, root.Links, 1, "the run links to the request that started it")
	assert.Equal(t, req.SpanContext.TraceID(), root.Links[0].SpanContext.TraceID())
	assert.Equal(t, req.SpanContext.SpanID(), root.Links[0].SpanContext.SpanID())
	id, _ := spanAttr(root, "graph.run_id")
	assert.Equal(t, run.ID, id)
	st, _ := spanAttr(root, "deepgraph.run.status")
	assert.Equal(t, "done", st, "the run's root span records its final status")
	assert.Equal(t, codes.Unset, root.Status.Code)

	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
	}
	var graphRuns int
	for _, s := range spans {
		if s.Name != "graph.run" {
			continue
		}
		graphRuns++
		assert.Equal(t, root.SpanContext.TraceID(), s.SpanContext.TraceID(), "the run's graph spans are in the run's trace")
		assert.Equal(t, root.SpanContext.SpanID(), s.Parent.SpanID(), "the graph run is a child of the run's root")
	}
	assert.Equal(t, 1, graphRuns)
	var nodes int
	for _, s := range spans {
		if s.SpanContext.TraceID() == root.SpanContext.TraceID() && s.Name != "run research" {
			_, ok := byID[s.Parent.SpanID()]
			assert.True(t, ok, "span %s has its parent in the run's trace", s.Name)
			nodes++
		}
	}
	assert.Greater(t, nodes, 3, "the run's steps and nodes are traced")

	got, _ := spanAttr(find(spans, "GET /threads/{thread_id}/runs/{run_id}/stream"), "http.response.status_code")
	assert.Equal(t, "200", got)
}

func TestUnknownRunIsTracedWithItsStatus(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel := telemetry.New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), telemetry.Options{})
	ts := newTestServer(t, world{}, func(o *Options, _ *testEngine) { o.Telemetry = tel })
	status, _, _ := ts.do("GET", "/threads/nope/runs/nope", nil)
	require.Equal(t, 404, status)
	s := find(exp.GetSpans(), "GET /threads/{thread_id}/runs/{run_id}")
	got, _ := spanAttr(s, "http.response.status_code")
	assert.Equal(t, "404", got)
	assert.False(t, s.Parent.IsValid(), "no traceparent: a new trace")
}

// A failed run's root span says so: deepgraph.run.status failed and an
// error status with the reason.
func TestFailedRunSpanHasErrorStatus(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel := telemetry.New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), telemetry.Options{})
	ts := newTestServer(t, world{}, func(o *Options, e *testEngine) {
		o.Telemetry = tel
		e.agentScript = fake.New(fake.Error(fmt.Errorf("the provider refused the key: %w", llm.ErrAuth)))
	})
	th := call[Thread](ts, "POST", "/threads", map[string]any{}, 201)
	run := call[Run](ts, "POST", "/threads/"+th.ID+"/runs", RunRequest{Kind: "agent", Input: "Finish"}, 202)
	ts.waitRun(run, runstore.StatusFailed)

	var root tracetest.SpanStub
	require.Eventually(t, func() bool {
		root = find(exp.GetSpans(), "run agent")
		return root.Name != ""
	}, 10*time.Second, 10*time.Millisecond, "the run's root span ends when the run does")
	st, _ := spanAttr(root, "deepgraph.run.status")
	assert.Equal(t, "failed", st)
	assert.Equal(t, codes.Error, root.Status.Code)
	assert.Contains(t, root.Status.Description, "refused the key")
}

func find(spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	for _, s := range spans {
		if s.Name == name {
			return s
		}
	}
	return tracetest.SpanStub{}
}

// A served run is counted in the metrics with its kind and final status,
// as a CLI run is.
func TestServedRunsAreMetered(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tel := telemetry.New(nil, telemetry.Options{MeterProvider: mp})
	ts := newTestServer(t, world{}, func(o *Options, _ *testEngine) { o.Telemetry = tel })

	th := call[Thread](ts, "POST", "/threads", map[string]any{}, 201)
	run := call[Run](ts, "POST", "/threads/"+th.ID+"/runs", RunRequest{Input: "How do checkpoints work?", Effort: "low"}, 202)
	ts.waitRun(run, runstore.StatusDone)

	require.Eventually(t, func() bool { return metered(t, reader, "research", "done") }, 10*time.Second, 10*time.Millisecond,
		"deepgraph.runs counts the served run as research, done")
}
