package openai

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

	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
)

const testKey = "sk-test-0123456789abcdef"

// recorded is one request the fake server received.
type recorded struct {
	Method string
	Path   string
	Header http.Header
	Body   map[string]any
}

// fakeServer speaks the Chat Completions wire protocol through handle, which
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
		f.reqs = append(f.reqs, recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
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

// testConfig points a Config at f with fast retries and no environment.
func testConfig(f *fakeServer) Config {
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

// writeJSON answers with a JSON body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
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

// jsonOf re-encodes v so that tests can compare JSON texts.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
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

func mustStatus(code int) func(w http.ResponseWriter, r *http.Request, attempt int) {
	return func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeJSON(w, code, map[string]any{"error": map[string]any{"message": fmt.Sprintf("status %d", code), "type": "x"}})
	}
}
