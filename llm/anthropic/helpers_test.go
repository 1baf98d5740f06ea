package anthropic

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
)

const testKey = "sk-ant-test-0123456789abcdef"

// recorded is one request the fake server received.
type recorded struct {
	Method string
	Path   string
	Header http.Header
	Body   map[string]any
	Raw    string
}

// fakeServer speaks the Messages API wire protocol through handle, which
// gets the 1-based attempt number.
type fakeServer struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []recorded
	handle func(w http.ResponseWriter, r *http.Request, attempt int)
}

func newFakeServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, attempt int)) *fakeServer {
	t.Helper()
	f := &fakeServer{handle: handle}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var body map[string]any
		if err := json.Unmarshal(data, &body); err != nil {
			http.Error(w, "body is not JSON: "+err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Raw: string(data)})
		n := len(f.reqs)
		f.mu.Unlock()
		f.handle(w, r, n)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func (f *fakeServer) only(t *testing.T) recorded {
	t.Helper()
	reqs := f.requests()
	require.Len(t, reqs, 1)
	return reqs[0]
}

func testConfig(f *fakeServer) Config {
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

func newTestModel(t *testing.T, f *fakeServer, edit func(*Config)) *Model {
	t.Helper()
	cfg := testConfig(f)
	if edit != nil {
		edit(&cfg)
	}
	m, err := New(cfg)
	require.NoError(t, err)
	return m
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
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

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func mustSchema[T any](t *testing.T) *jsonschema.Schema {
	t.Helper()
	s, err := jsonschema.For[T](nil)
	require.NoError(t, err)
	return s
}

// waitNoLangchainGoroutines fails if a goroutine running langchaingo code is
// still alive shortly after the calls returned.
func waitNoLangchainGoroutines(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "tmc/langchaingo") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a langchaingo goroutine outlived its call:\n%s", stacks)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
