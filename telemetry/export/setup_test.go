package export_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/telemetry"
	"github.com/deepgraph/deepgraph/telemetry/export"
)

// clearEnv unsets every variable Start reads, for the test.
func clearEnv(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER",
		"OTEL_TRACES_SAMPLER_ARG", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED", "OTEL_METRICS_EXPORTER",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_METRIC_EXPORT_INTERVAL"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func TestOffWhenNothingIsSet(t *testing.T) {
	clearEnv(t)
	p, err := export.Start(context.Background(), export.Config{})
	require.NoError(t, err)
	assert.Nil(t, p)
	assert.Nil(t, p.Tel())
	assert.NoError(t, p.Shutdown(context.Background()))
}

// receiver is an OTLP/HTTP trace endpoint decoding what it is sent; it
// accepts (and drops) metrics too.
func receiver(t *testing.T) (*httptest.Server, func() []*coltrace.ExportTraceServiceRequest) {
	srv, traces, _ := otlpReceiver(t)
	return srv, traces
}

// otlpReceiver is an OTLP/HTTP endpoint decoding the traces and metrics it
// is sent (protobuf).
func otlpReceiver(t *testing.T) (*httptest.Server, func() []*coltrace.ExportTraceServiceRequest, func() []*colmetrics.ExportMetricsServiceRequest) {
	var mu sync.Mutex
	var traces []*coltrace.ExportTraceServiceRequest
	var metrics []*colmetrics.ExportMetricsServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var req, resp proto.Message
		switch r.URL.Path {
		case "/v1/traces":
			req, resp = &coltrace.ExportTraceServiceRequest{}, &coltrace.ExportTraceServiceResponse{}
		case "/v1/metrics":
			req, resp = &colmetrics.ExportMetricsServiceRequest{}, &colmetrics.ExportMetricsServiceResponse{}
		default:
			http.Error(w, "no such path", http.StatusNotFound)
			return
		}
		if err := proto.Unmarshal(body, req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		switch req := req.(type) {
		case *coltrace.ExportTraceServiceRequest:
			traces = append(traces, req)
		case *colmetrics.ExportMetricsServiceRequest:
			metrics = append(metrics, req)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(resp)
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []*coltrace.ExportTraceServiceRequest {
			mu.Lock()
			defer mu.Unlock()
			return traces
		}, func() []*colmetrics.ExportMetricsServiceRequest {
			mu.Lock()
			defer mu.Unlock()
			return metrics
		}
}

func TestOTLPHTTPExportFromTheEnvironment(t *testing.T) {
	clearEnv(t)
	srv, got := receiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "my-research")
	p, err := export.Start(context.Background(), export.Config{})
	require.NoError(t, err)
	require.NotNil(t, p)
	ctx, parent := p.Tel().Tracer().Start(context.Background(), "graph.run")
	_, child := p.Tel().Tracer().Start(ctx, "graph.step")
	child.End()
	parent.End()
	require.NoError(t, p.Shutdown(context.Background()))

	reqs := got()
	require.NotEmpty(t, reqs, "the receiver got the spans")
	names := map[string][]byte{}
	parents := map[string][]byte{}
	service := ""
	for _, req := range reqs {
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.Resource.Attributes {
				if kv.Key == "service.name" {
					service = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				assert.Equal(t, telemetry.ScopeName, ss.Scope.Name)
				for _, s := range ss.Spans {
					names[s.Name], parents[s.Name] = s.SpanId, s.ParentSpanId
				}
			}
		}
	}
	assert.Equal(t, "my-research", service)
	require.Contains(t, names, "graph.run")
	assert.Equal(t, names["graph.run"], parents["graph.step"])
}

func TestSamplerFromTheEnvironment(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	p, err := export.Start(context.Background(), export.Config{TraceFile: filepath.Join(dir, "t.jsonl")})
	require.NoError(t, err)
	_, span := p.Tel().Tracer().Start(context.Background(), "x")
	assert.False(t, span.IsRecording(), "OTEL_TRACES_SAMPLER=always_off is respected")
	span.End()
	require.NoError(t, p.Shutdown(context.Background()))
}

func TestUnsupportedProtocolsSayWhatToDo(t *testing.T) {
	for proto, want := range map[string]string{
		"grpc":      "set it to http/protobuf",
		"http/json": "--trace FILE",
		"carrier":   "unknown protocol",
	} {
		t.Run(proto, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
			_, err := export.Start(context.Background(), export.Config{})
			require.ErrorIs(t, err, export.ErrConfig)
			assert.ErrorContains(t, err, want)
			assert.ErrorContains(t, err, "OTEL_EXPORTER_OTLP_PROTOCOL")
		})
	}
}

func TestExporterNoneAndSDKDisabledTurnExportOff(t *testing.T) {
	for _, env := range [][]string{
		{"OTEL_TRACES_EXPORTER", "none", "OTEL_METRICS_EXPORTER", "none"},
		{"OTEL_SDK_DISABLED", "true"},
	} {
		clearEnv(t)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
		for i := 0; i < len(env); i += 2 {
			t.Setenv(env[i], env[i+1])
		}
		p, err := export.Start(context.Background(), export.Config{})
		require.NoError(t, err)
		assert.Nil(t, p, env)
	}
}

func TestEachSignalTurnsOffAlone(t *testing.T) {
	srv, _ := receiver(t)
	clearEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	p, err := export.Start(context.Background(), export.Config{})
	require.NoError(t, err)
	require.NotNil(t, p, "metrics stay on")
	assert.Nil(t, p.TracerProvider())
	assert.NotNil(t, p.MeterProvider())
	require.NoError(t, p.Shutdown(context.Background()))

	clearEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	p, err = export.Start(context.Background(), export.Config{})
	require.NoError(t, err)
	require.NotNil(t, p, "traces stay on")
	assert.NotNil(t, p.TracerProvider())
	assert.Nil(t, p.MeterProvider())
	require.NoError(t, p.Shutdown(context.Background()))

	clearEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc")
	_, err = export.Start(context.Background(), export.Config{})
	require.ErrorIs(t, err, export.ErrConfig)
	assert.ErrorContains(t, err, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=grpc")
}

func TestTraceFileIsOTLPJSON(t *testing.T) {
	clearEnv(t)
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	p, err := export.Start(context.Background(), export.Config{TraceFile: path})
	require.NoError(t, err)
	_, span := p.Tel().Tracer().Start(context.Background(), "graph.run")
	span.End()
	require.NoError(t, p.Shutdown(context.Background()))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var td telemetry.OTLPTraces
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(string(data))), &td))
	require.Len(t, td.ResourceSpans, 1)
	assert.Equal(t, "graph.run", td.ResourceSpans[0].ScopeSpans[0].Spans[0].Name)
	assert.Len(t, td.ResourceSpans[0].ScopeSpans[0].Spans[0].TraceID, 32)
}

func TestTraceFileThatCannotBeCreated(t *testing.T) {
	clearEnv(t)
	_, err := export.Start(context.Background(), export.Config{TraceFile: filepath.Join(t.TempDir(), "no", "such", "dir", "t.jsonl")})
	require.ErrorIs(t, err, export.ErrConfig)
	assert.ErrorContains(t, err, "--trace")
}

func TestOTLPHTTPMetricsExport(t *testing.T) {
	clearEnv(t)
	srv, traces, metrics := otlpReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "my-research")
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "3600000") // only Shutdown's flush exports
	p, err := export.Start(context.Background(), export.Config{})
	require.NoError(t, err)
	require.NotNil(t, p.MeterProvider())
	m := p.Tel().Model(fake.New(fake.Text("ok").WithTokens(12, 5)), "openai:gpt-4.1-mini", llm.RoleAnswer)
	_, err = m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
	require.NoError(t, err)
	assert.Empty(t, metrics(), "nothing is sent before the interval or Shutdown")
	require.NoError(t, p.Shutdown(context.Background()))
	require.NotEmpty(t, traces(), "spans go to /v1/traces")

	reqs := metrics()
	require.NotEmpty(t, reqs, "Shutdown flushes the metrics to /v1/metrics")
	tokens := map[string]float64{}
	var calls int64
	service := ""
	for _, req := range reqs {
		for _, rm := range req.ResourceMetrics {
			for _, kv := range rm.Resource.Attributes {
				if kv.Key == "service.name" {
					service = kv.Value.GetStringValue()
				}
			}
			for _, sm := range rm.ScopeMetrics {
				assert.Equal(t, telemetry.ScopeName, sm.Scope.Name)
				for _, met := range sm.Metrics {
					switch met.Name {
					case telemetry.MetricTokenUsage:
						assert.Equal(t, "{token}", met.Unit)
						for _, dp := range met.GetHistogram().DataPoints {
							a := map[string]string{}
							for _, kv := range dp.Attributes {
								a[kv.Key] = kv.Value.GetStringValue()
							}
							assert.Equal(t, "gpt-4.1-mini", a["gen_ai.request.model"])
							assert.Equal(t, llm.RoleAnswer, a["deepgraph.role"])
							tokens[a["gen_ai.token.type"]] += dp.GetSum()
						}
					case telemetry.MetricModelCalls:
						for _, dp := range met.GetSum().DataPoints {
							calls += dp.GetAsInt()
						}
					}
				}
			}
		}
	}
	assert.Equal(t, "my-research", service)
	assert.Equal(t, map[string]float64{"input": 12, "output": 5}, tokens)
	assert.Equal(t, int64(1), calls)
}
