package export

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestOTLPHTTPSettings(t *testing.T) {
	h, err := newOTLPHTTP(envOf(nil), "TRACES", "v1/traces")
	require.NoError(t, err)
	assert.Equal(t, "http://localhost:4318/v1/traces", h.url, "the specification's default")
	assert.Equal(t, defaultOTLPTimeout, h.timeout)

	h, err = newOTLPHTTP(envOf(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":         "https://collector:4318/",
		"OTEL_EXPORTER_OTLP_HEADERS":          "Authorization=Bearer%20abc, x-tenant=a",
		"OTEL_EXPORTER_OTLP_METRICS_HEADERS":  "x-tenant=b",
		"OTEL_EXPORTER_OTLP_TIMEOUT":          "2500",
		"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT":  "",
		"OTEL_EXPORTER_OTLP_COMPRESSION":      "gzip",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":  "http://elsewhere:1/traces",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "",
	}), "METRICS", "v1/metrics")
	require.NoError(t, err)
	assert.Equal(t, "https://collector:4318/v1/metrics", h.url, "the base endpoint gains the signal's path")
	assert.Equal(t, "Bearer abc", h.headers.Get("Authorization"), "values are percent-decoded")
	assert.Equal(t, "b", h.headers.Get("X-Tenant"), "the signal's own headers win")
	assert.Equal(t, 2500*1e6, float64(h.timeout))
	assert.True(t, h.gzip)

	h, err = newOTLPHTTP(envOf(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://elsewhere:1/traces"}), "TRACES", "v1/traces")
	require.NoError(t, err)
	assert.Equal(t, "http://elsewhere:1/traces", h.url, "a signal's endpoint is used as it is")

	for vars, want := range map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=localhost:4318":         "is not an http:// or https:// URL",
		"OTEL_EXPORTER_OTLP_TIMEOUT=10s":                     "OTEL_EXPORTER_OTLP_TIMEOUT=\"10s\": give milliseconds",
		"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION=zstd":         "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION=\"zstd\": use gzip or none",
		"OTEL_EXPORTER_OTLP_HEADERS=secret-token":            "OTEL_EXPORTER_OTLP_HEADERS: a header is not key=value",
		"OTEL_EXPORTER_OTLP_CERTIFICATE=/no/such/ca.pem":     "OTEL_EXPORTER_OTLP_CERTIFICATE: open /no/such/ca.pem",
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=/no/cert.pem": "needs both",
	} {
		k, v, _ := cut(vars)
		_, err := newOTLPHTTP(envOf(map[string]string{k: v}), "TRACES", "v1/traces")
		require.Error(t, err, vars)
		assert.ErrorIs(t, err, ErrConfig)
		assert.ErrorContains(t, err, want)
		assert.NotContains(t, err.Error(), "secret-token", "a header's text is never shown")
	}
	_, err = newMetricExporter(envOf(map[string]string{"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "sometimes"}))
	assert.ErrorContains(t, err, "use cumulative, delta or lowmemory")
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '=' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// TestOTLPHTTPSendsRetriesAndCompresses: the spans arrive gzipped with the
// headers, after one 503 that is retried.
func TestOTLPHTTPSendsRetriesAndCompresses(t *testing.T) {
	var mu sync.Mutex
	var attempts int
	var got *coltrace.ExportTraceServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		attempts++
		if attempts == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		assert.Equal(t, "/v1/traces", r.URL.Path)
		assert.Equal(t, "application/x-protobuf", r.Header.Get("Content-Type"))
		assert.Equal(t, "gzip", r.Header.Get("Content-Encoding"))
		assert.Equal(t, "k1", r.Header.Get("Api-Key"))
		zr, err := gzip.NewReader(r.Body)
		require.NoError(t, err)
		body, err := io.ReadAll(zr)
		require.NoError(t, err)
		got = &coltrace.ExportTraceServiceRequest{}
		require.NoError(t, proto.Unmarshal(body, got), "TracesData reads as the collector's request")
	}))
	defer srv.Close()
	h, err := newOTLPHTTP(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL,
		"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=k1"}), "TRACES", "v1/traces")
	require.NoError(t, err)
	spans := []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "research"}}}}}}
	require.NoError(t, traceClient{h}.UploadTraces(context.Background(), spans))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 2, attempts, "the 503 was retried")
	require.NotNil(t, got)
	assert.Equal(t, "research", got.ResourceSpans[0].ScopeSpans[0].Spans[0].Name)
}

func TestOTLPHTTPDoesNotRetryABadRequest(t *testing.T) {
	var mu sync.Mutex
	attempts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		attempts++
		mu.Unlock()
		http.Error(w, "malformed", http.StatusBadRequest)
	}))
	defer srv.Close()
	h, err := newOTLPHTTP(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}), "TRACES", "v1/traces")
	require.NoError(t, err)
	err = traceClient{h}.UploadTraces(context.Background(), []*tracepb.ResourceSpans{{}})
	assert.ErrorContains(t, err, "400 Bad Request: malformed")
	assert.Equal(t, 1, attempts)
}
