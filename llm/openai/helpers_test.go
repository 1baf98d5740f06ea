package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/wiretest"
)

const testKey = "sk-test-0123456789abcdef"

// testConfig points a Config at f with fast retries and no environment.
func testConfig(f *wiretest.Server) Config {
	return Config{
		APIKey:  testKey,
		KeyEnv:  EnvAPIKey,
		BaseURL: f.URL + "/v1",
		Client: llm.ClientConfig{
			HTTPClient:   f.Client(),
			RetryBackoff: time.Millisecond,
			MaxRetries:   2,
			Timeout:      10 * time.Second,
		},
		Getenv: func(string) string { return "" },
	}
}

func newTestModel(t *testing.T, f *wiretest.Server, edit func(*Config)) *Model {
	t.Helper()
	cfg := testConfig(f)
	if edit != nil {
		edit(&cfg)
	}
	m, err := New(cfg)
	require.NoError(t, err)
	return m
}

// completion is a non-streamed chat.completion reply.
func completion(content string, extra map[string]any) map[string]any {
	msg := map[string]any{"role": "assistant", "content": content}
	for k, v := range extra {
		msg[k] = v
	}
	return map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4.1-mini-2025-04-14",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
		"usage": map[string]any{
			"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17,
			"prompt_tokens_details":     map[string]any{"cached_tokens": 4},
			"completion_tokens_details": map[string]any{"reasoning_tokens": 2},
		},
	}
}

// writeSSE streams events (each a JSON value or a raw string) as
// "data: …" lines, flushing after each.
func writeSSE(w http.ResponseWriter, events ...any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for _, e := range events {
		var line string
		switch v := e.(type) {
		case string:
			line = v
		default:
			b, _ := json.Marshal(v)
			line = "data: " + string(b) + "\n\n"
		}
		_, _ = io.WriteString(w, line)
		if fl != nil {
			fl.Flush()
		}
	}
}

func delta(d map[string]any, finish any) map[string]any {
	return map[string]any{
		"id": "chatcmpl-s", "object": "chat.completion.chunk", "model": "gpt-4.1-mini-2025-04-14",
		"choices": []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}},
	}
}

func usageChunk(prompt, completion int) map[string]any {
	return map[string]any{
		"id": "chatcmpl-s", "object": "chat.completion.chunk", "model": "gpt-4.1-mini-2025-04-14", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
	}
}

func mustStatus(code int) func(w http.ResponseWriter, r *http.Request, attempt int) {
	return func(w http.ResponseWriter, _ *http.Request, _ int) {
		wiretest.WriteJSON(w, code, map[string]any{"error": map[string]any{"message": fmt.Sprintf("status %d", code), "type": "x"}})
	}
}
