// Package wiretest is test support for deepgraph's providers built on the
// vendors' SDKs (llm/openai, llm/anthropic): a fake HTTP server that records
// the JSON requests it receives and answers through a scripted handler, and
// checks that are the same for every provider. Only tests import it.
//
//	f := wiretest.NewServer(t, func(w http.ResponseWriter, r *http.Request, attempt int) {
//		wiretest.WriteJSON(w, http.StatusOK, reply)
//	})
//	… // point the provider at f.URL, call it
//	req := f.Only(t) // exactly one request arrived
//	assert.Equal(t, "/v1/chat/completions", req.Path)
package wiretest

import (
	"encoding/json"
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

	"github.com/deepgraph/deepgraph/schemas"
)

// Request is one request a Server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   map[string]any // the JSON body, decoded
	Raw    string         // the body as sent
}

// Server is an httptest.Server that records every request and answers it
// through a handler that gets the 1-based number of the request. A body
// that is not JSON is answered with 400 and not passed to the handler.
type Server struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []Request
	handle func(w http.ResponseWriter, r *http.Request, attempt int)
}

// NewServer starts a Server, closed when the test ends.
func NewServer(t testing.TB, handle func(w http.ResponseWriter, r *http.Request, attempt int)) *Server {
	t.Helper()
	s := &Server{handle: handle}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
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
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Raw: string(data)})
	n := len(s.reqs)
	s.mu.Unlock()
	s.handle(w, r, n)
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Only returns the one request received, failing the test unless exactly
// one was.
func (s *Server) Only(t testing.TB) Request {
	t.Helper()
	reqs := s.Requests()
	require.Len(t, reqs, 1)
	return reqs[0]
}

// WriteJSON answers with v encoded as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// JSON encodes v, so tests can compare JSON texts.
func JSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// Schema infers the JSON Schema of T.
func Schema[T any](t testing.TB) *jsonschema.Schema {
	t.Helper()
	s, err := jsonschema.For[T](nil)
	require.NoError(t, err)
	return s
}

// NoGoroutineRunning fails the test if a goroutine whose stack mentions
// marker (e.g. "openai-go") is still alive two seconds after the
// call: every call must end the goroutines it started.
func NoGoroutineRunning(t testing.TB, marker string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, marker) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a goroutine running %s outlived its call:\n%s", marker, stacks)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// DottedTools are tool definitions with an MCP-style dotted name
// (files.read_file) beside a plain one, for the tests of providers that
// send such names in another form.
func DottedTools() []schemas.ToolDef {
	return []schemas.ToolDef{{Name: "files.read_file", Description: "Read a file."}, {Name: "web_search"}}
}

// DottedHistory is a conversation with calls of dotted tools — one still
// offered, one no longer — and their results; call ids start with
// idPrefix ("call_" for OpenAI, "toolu_" for Anthropic), followed by a and
// b.
func DottedHistory(idPrefix string) []schemas.Message {
	read := schemas.ToolCall{ID: idPrefix + "a", Name: "files.read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)}
	gone := schemas.ToolCall{ID: idPrefix + "b", Name: "gone.tool"} // no longer offered
	return []schemas.Message{
		schemas.UserMessage("Read a.txt."),
		{Role: schemas.Assistant, ToolCalls: []schemas.ToolCall{read, gone}},
		schemas.ToolResultMessage(read, "hello"),
		schemas.ToolResultMessage(gone, "gone"),
	}
}
