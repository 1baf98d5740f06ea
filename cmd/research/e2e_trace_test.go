package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/telemetry"
)

// traceTree renders the spans of an OTLP/JSON trace file as an indented
// tree ("name {key=value …}"), children in start order, and returns the
// spans by name. Every span must be of one trace and have its parent in
// the file.
func traceTree(t *testing.T, path string, keys ...string) (string, map[string][]telemetry.OTLPSpan) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var spans []telemetry.OTLPSpan
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var td telemetry.OTLPTraces
		require.NoError(t, json.Unmarshal([]byte(line), &td), "each line is OTLP/JSON TracesData")
		for _, rs := range td.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
	}
	require.NotEmpty(t, spans)
	byID := map[string]bool{}
	byName := map[string][]telemetry.OTLPSpan{}
	kids := map[string][]telemetry.OTLPSpan{}
	for _, s := range spans {
		byID[s.SpanID] = true
		byName[s.Name] = append(byName[s.Name], s)
		assert.Equal(t, spans[0].TraceID, s.TraceID, "span %s is in another trace: a run is one trace", s.Name)
	}
	for _, s := range spans {
		if s.ParentSpanID != "" {
			require.True(t, byID[s.ParentSpanID], "span %s: its parent is not in the file", s.Name)
		}
		kids[s.ParentSpanID] = append(kids[s.ParentSpanID], s)
	}
	var b strings.Builder
	var walk func(id string, depth int)
	walk = func(id string, depth int) {
		k := kids[id]
		sort.SliceStable(k, func(i, j int) bool { return k[i].StartTimeUnixNano < k[j].StartTimeUnixNano })
		for _, s := range k {
			fmt.Fprintf(&b, "%s%s%s\n", strings.Repeat("  ", depth), s.Name, attrText(s, keys))
			walk(s.SpanID, depth+1)
		}
	}
	walk("", 0)
	return b.String(), byName
}

func attrText(s telemetry.OTLPSpan, keys []string) string {
	var parts []string
	for _, k := range keys {
		if v, ok := spanAttr(s, k); ok {
			parts = append(parts, k+"="+v)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "  {" + strings.Join(parts, " ") + "}"
}

func spanAttr(s telemetry.OTLPSpan, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if kv.Key != key {
			continue
		}
		switch v := kv.Value; {
		case v.StringValue != nil:
			return *v.StringValue, true
		case v.IntValue != nil:
			return *v.IntValue, true
		case v.BoolValue != nil:
			return fmt.Sprint(*v.BoolValue), true
		case v.DoubleValue != nil:
			return fmt.Sprint(*v.DoubleValue), true
		case v.ArrayValue != nil:
			var vs []string
			for _, e := range v.ArrayValue.Values {
				if e.StringValue != nil {
					vs = append(vs, *e.StringValue)
				}
			}
			return strings.Join(vs, ","), true
		}
	}
	return "", false
}

func TestE2ETraceFileAndOTLPExport(t *testing.T) {
	t.Parallel()
	_, _, _, vars := searchSetup(t)
	var otlpPosts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" && len(body) > 0 {
			otlpPosts.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	vars["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.URL
	vars["OTEL_SERVICE_NAME"] = "research-e2e"
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	res := run(t, env(t, vars), "-v", "--trace", path, "--allow-private-urls", "--model", "openai:gpt-4.1-mini", "--loops", "1",
		"How does Raft elect a leader? secret-question-words")
	require.Equal(t, 0, res.code, res)
	assert.Positive(t, otlpPosts.Load(), "OTEL_EXPORTER_OTLP_ENDPOINT received the spans over OTLP/HTTP")

	tree, byName := traceTree(t, path, "graph.node", "graph.step", "gen_ai.system", "gen_ai.request.model",
		"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "deepgraph.role", "deepgraph.search.provider",
		"deepgraph.search.results", "server.address", "deepgraph.page.bytes")
	t.Logf("trace:\n%s", tree)
	if out := os.Getenv("DEEPGRAPH_TRACE_TREE_OUT"); out != "" {
		require.NoError(t, os.WriteFile(out, []byte(tree), 0o644))
	}
	require.Len(t, byName["graph.run"], 1)
	assert.Empty(t, byName["graph.run"][0].ParentSpanID, "the run is the root")
	assert.NotEmpty(t, byName["graph.node generate_query"])
	assert.Len(t, byName["graph.node web_research"], 2, "one task per query")
	chats := byName["chat gpt-4.1-mini"]
	require.NotEmpty(t, chats)
	sys, _ := spanAttr(chats[0], "gen_ai.system")
	assert.Equal(t, "openai", sys)
	_, ok := spanAttr(chats[0], "gen_ai.usage.input_tokens")
	assert.True(t, ok, "token usage is on the model span")
	assert.NotEmpty(t, byName["read_page"], "page reads are spans")
	host, _ := spanAttr(byName["read_page"][0], "server.address")
	assert.Equal(t, "127.0.0.1", host)
	var searches int
	for name, ss := range byName {
		if strings.HasPrefix(name, "search ") {
			searches += len(ss)
		}
	}
	assert.GreaterOrEqual(t, searches, 2, "each query's search is a span")

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "secret-question-words", "no prompt text without opting in")
	assert.Contains(t, string(data), `"research-e2e"`, "OTEL_SERVICE_NAME names the service")
	assert.Regexp(t, `trace_id=[0-9a-f]{32} span_id=[0-9a-f]{16}`, res.stderr, "log lines carry trace and span ids")
}

func TestE2ETraceGRPCProtocolIsAUsageError(t *testing.T) {
	t.Parallel()
	_, _, _, vars := searchSetup(t)
	vars["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:1"
	vars["OTEL_EXPORTER_OTLP_PROTOCOL"] = "grpc"
	res := run(t, env(t, vars), "--model", "openai:gpt-4.1-mini", "How does Raft elect a leader?")
	assert.Equal(t, exitUsage, res.code, res)
	assert.Contains(t, res.stderr, "http/protobuf")
}
