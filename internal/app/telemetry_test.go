package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/deepgraph/deepgraph/telemetry"
	"github.com/deepgraph/deepgraph/tools"
)

// fakeToolCaller is an OpenAI chat-completions server whose model calls
// str_replace_editor (creating a file with private text) and then
// terminate.
func fakeToolCaller(t *testing.T) *httptest.Server {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		i := n.Add(1)
		name, args := "str_replace_editor", `{"command":"create","path":"notes.md","file_text":"private-file-text"}`
		if i > 1 {
			name, args = "terminate", `{"status":"success","answer":"private-answer-text"}`
		}
		call := map[string]any{"index": 0, "id": fmt.Sprintf("call_%d", i), "type": "function", "function": map[string]any{"name": name, "arguments": args}}
		usage := map[string]any{"prompt_tokens": 100, "completion_tokens": 30, "total_tokens": 130}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "model": req.Model, "usage": usage,
				"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls",
					"message": map[string]any{"role": "assistant", "content": "", "tool_calls": []any{call}}}}})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, chunk := range []map[string]any{
			{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "tool_calls": []any{call}}}}},
			{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"}}},
			{"choices": []any{}, "usage": usage},
		} {
			chunk["id"], chunk["object"], chunk["model"] = "c", "chat.completion.chunk", req.Model
			b, _ := json.Marshal(chunk)
			_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		}
		_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestAgentRunIsOneTrace(t *testing.T) {
	llmSrv := fakeToolCaller(t)
	cfg := load(t, "", map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": llmSrv.URL + "/v1"}, "--workspace", t.TempDir())
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx := telemetry.ContextWith(context.Background(), telemetry.New(tp, telemetry.Options{}))

	a, err := NewAgent(ctx, cfg, AgentIO{})
	require.NoError(t, err)
	defer a.Close()
	res, err := a.Agent.Run(ctx, "write notes", nil)
	require.NoError(t, err)
	assert.Equal(t, "private-answer-text", res.Answer)

	spans := exp.GetSpans()
	require.NotEmpty(t, spans)
	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
		assert.Equal(t, spans[0].SpanContext.TraceID(), s.SpanContext.TraceID(), "span %s is in another trace", s.Name)
	}
	// parents names the chain of a span's ancestors, nearest first.
	parents := func(s tracetest.SpanStub) []string {
		var out []string
		for p, ok := byID[s.Parent.SpanID().String()]; ok; p, ok = byID[p.Parent.SpanID().String()] {
			out = append(out, p.Name)
		}
		return out
	}
	var roots, chats, tools []tracetest.SpanStub
	for _, s := range spans {
		switch {
		case !s.Parent.IsValid():
			roots = append(roots, s)
		case s.Name == "chat gpt-4.1-mini":
			chats = append(chats, s)
		case strings.HasPrefix(s.Name, "execute_tool "):
			tools = append(tools, s)
		}
	}
	require.Len(t, roots, 1, "one root: the agent's graph run")
	assert.Equal(t, "graph.run", roots[0].Name)
	require.Len(t, chats, 2, "one model call per step")
	for _, c := range chats {
		up := parents(c)
		require.NotEmpty(t, up)
		assert.True(t, strings.HasPrefix(up[0], "graph.node "), "a model call is inside a node: %v", up)
		assert.Equal(t, "graph.run", up[len(up)-1])
		assert.Equal(t, "agent", attrOf(c, telemetry.AttrRole))
	}
	require.Len(t, tools, 2, "the editor call, then terminate")
	for i, name := range []string{"str_replace_editor", "terminate"} {
		assert.Equal(t, "execute_tool "+name, tools[i].Name)
		assert.Equal(t, name, attrOf(tools[i], telemetry.AttrToolName))
		up := parents(tools[i])
		require.NotEmpty(t, up)
		assert.True(t, strings.HasPrefix(up[0], "graph.node "), "a tool call is inside a node: %v", up)
		assert.Equal(t, "graph.run", up[len(up)-1])
	}

	data, err := json.Marshal(spans)
	require.NoError(t, err)
	for _, private := range []string{"private-file-text", "private-answer-text", "write notes", "notes.md"} {
		assert.NotContains(t, string(data), private, "no argument, output or task text by default")
	}
}

func attrOf(s tracetest.SpanStub, key attribute.Key) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

func TestTraceToolsKeepsOwnBounds(t *testing.T) {
	tel := telemetry.New(sdktrace.NewTracerProvider(), telemetry.Options{})
	plain, err := tools.Func("plain", "a tool", func(context.Context, struct{}) (tools.Result, error) { return tools.Result{}, nil })
	require.NoError(t, err)
	unbounded := tools.WithTimeout(plain, 0)
	c, err := tools.NewCollection(unbounded)
	require.NoError(t, err)
	traced, err := traceTools(tel, c)
	require.NoError(t, err)
	got, ok := traced.Get("plain")
	require.True(t, ok)
	b, ok := got.(tools.Bounded)
	require.True(t, ok, "a tool with its own bound (deep_research's none) keeps it when traced")
	assert.Equal(t, time.Duration(0), b.CallTimeout())
	assert.NotEqual(t, unbounded, got, "the tool is wrapped in a span")
}
