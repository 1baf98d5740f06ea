package gemini

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
)

// testKey is the API key the fake server expects. Tests assert it never
// shows up in errors.
const testKey = "test-key-0123456789abcdef"

// recorded is one request the fake server received.
type recorded struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// wireRequest is the top level of a generateContent request body, with the
// parts tests compare as JSON.
type wireRequest struct {
	Contents          json.RawMessage `json:"contents"`
	SystemInstruction json.RawMessage `json:"systemInstruction"`
	Tools             json.RawMessage `json:"tools"`
	ToolConfig        json.RawMessage `json:"toolConfig"`
	GenerationConfig  json.RawMessage `json:"generationConfig"`
}

func (r recorded) wire(t *testing.T) wireRequest {
	t.Helper()
	var w wireRequest
	require.NoError(t, json.Unmarshal(r.Body, &w), "request body: %s", r.Body)
	return w
}

// fakeGemini is an httptest server speaking the Gemini REST protocol. Each
// request is answered by the next scripted handler; the last one repeats.
type fakeGemini struct {
	srv      *httptest.Server
	mu       sync.Mutex
	reqs     []recorded
	handlers []http.HandlerFunc
}

func newFake(t *testing.T, handlers ...http.HandlerFunc) *fakeGemini {
	t.Helper()
	require.NotEmpty(t, handlers)
	f := &fakeGemini{handlers: handlers}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGemini) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.reqs)
	f.reqs = append(f.reqs, recorded{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	h := f.handlers[min(n, len(f.handlers)-1)]
	f.mu.Unlock()
	if r.Header.Get("x-goog-api-key") != testKey {
		writeJSON(w, http.StatusForbidden, `{"error":{"code":403,"message":"Method doesn't allow unregistered callers","status":"PERMISSION_DENIED"}}`)
		return
	}
	h(w, r)
}

func (f *fakeGemini) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// fastClient retries quickly so tests stay fast.
func fastClient() llm.ClientConfig {
	return llm.ClientConfig{MaxRetries: -1, RetryBackoff: time.Millisecond, Timeout: 10 * time.Second}
}

// model returns a Model talking to f; cfg fields left empty get test values.
func (f *fakeGemini) model(t *testing.T, cfg Config) *Model {
	t.Helper()
	if cfg.APIKey == "" {
		cfg.APIKey, cfg.KeyEnv = testKey, EnvAPIKey
	}
	cfg.BaseURL = f.srv.URL
	if cfg.Client == (llm.ClientConfig{}) {
		cfg.Client = fastClient()
	}
	m, err := New(context.Background(), cfg)
	require.NoError(t, err)
	return m
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// reply answers with a JSON body and optional header pairs.
func reply(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		writeJSON(w, status, body)
	}
}

// sse answers with a server-sent-event stream, one event per chunk, the
// way streamGenerateContent?alt=sse does.
func sse(chunks ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fl, _ := w.(http.Flusher)
		for _, c := range chunks {
			_, _ = fmt.Fprintf(w, "data: %s\r\n\r\n", c)
			if fl != nil {
				fl.Flush()
			}
		}
	}
}

// hang never answers; it returns when the client goes away.
func hang(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

// errorBody is a Gemini error response body.
func errorBody(code int, status, message string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "status": status, "message": message}})
	return string(b)
}

// compact re-encodes JSON without insignificant space, for readable diffs.
func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	if len(raw) == 0 {
		return ""
	}
	var v any
	require.NoError(t, json.Unmarshal(raw, &v))
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// noKey fails when the test key appears in s.
func noKey(t *testing.T, s string) {
	t.Helper()
	require.False(t, strings.Contains(s, testKey), "the API key leaked: %s", s)
}
