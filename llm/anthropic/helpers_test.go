package anthropic

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

const testKey = "sk-ant-test-0123456789abcdef"

func testConfig(f *wiretest.Server) Config {
	return Config{
		APIKey:  testKey,
		KeyEnv:  EnvAPIKey,
		BaseURL: f.URL,
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

// message is a non-streamed Messages API reply with the given content blocks.
func message(stop string, blocks ...any) map[string]any {
	return map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
		"content": blocks, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 20, "output_tokens": 3, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 7},
	}
}

func textBlock(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func toolUse(id, name string, input string) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": json.RawMessage(input)}
}

// writeEvents streams Messages API events ("event: <type>" + "data: …"),
// flushing after each. A string is written as is.
func writeEvents(w http.ResponseWriter, events ...any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for _, e := range events {
		var s string
		switch v := e.(type) {
		case string:
			s = v
		case map[string]any:
			b, _ := json.Marshal(v)
			s = fmt.Sprintf("event: %s\ndata: %s\n\n", v["type"], b)
		}
		_, _ = io.WriteString(w, s)
		if fl != nil {
			fl.Flush()
		}
	}
}

func messageStart(input int) map[string]any {
	return map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_s", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
		"content": []any{}, "stop_reason": nil,
		"usage": map[string]any{"input_tokens": input, "output_tokens": 1, "cache_read_input_tokens": 4},
	}}
}

func blockStart(i int, block map[string]any) map[string]any {
	return map[string]any{"type": "content_block_start", "index": i, "content_block": block}
}

func textDelta(i int, s string) map[string]any {
	return map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": s}}
}

func jsonDelta(i int, s string) map[string]any {
	return map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": s}}
}

func blockStop(i int) map[string]any { return map[string]any{"type": "content_block_stop", "index": i} }

func messageDelta(stop string, output int) map[string]any {
	return map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": output}}
}

func messageStop() map[string]any { return map[string]any{"type": "message_stop"} }
