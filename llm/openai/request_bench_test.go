package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// schemaRecorder records the request of the call made through it and
// answers with a valid SearchQueryList.
type schemaRecorder struct{ req llm.Request }

func (r *schemaRecorder) Generate(_ context.Context, _ []schemas.Message, opts ...llm.Option) (*llm.Response, error) {
	r.req = llm.NewRequest(opts...)
	return &llm.Response{Content: `{"query":["q"],"rationale":"r"}`}, nil
}

// BenchmarkPrepareStructured builds and encodes the request of a structured
// call (the schema llm.Structured sends, a system and a user message): the
// part of each call that is ours before the SDK takes over.
func BenchmarkPrepareStructured(b *testing.B) {
	rec := &schemaRecorder{}
	if _, err := llm.Structured[schemas.SearchQueryList](context.Background(), rec, nil); err != nil {
		b.Fatal(err)
	}
	m, err := New(Config{APIKey: "k", BaseURL: "http://127.0.0.1:1/v1", Model: "fake", Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	msgs := []schemas.Message{schemas.SystemMessage("You are a research assistant."), schemas.UserMessage("How do Go iterators work?")}
	b.ReportAllocs()
	for b.Loop() {
		p, err := m.prepare(msgs, rec.req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(p.params); err != nil {
			b.Fatal(err)
		}
	}
}

// TestIsFalseSchemaAgreesWithEncoding checks isFalseSchema's shortcut
// against what the schema encodes as.
func TestIsFalseSchemaAgreesWithEncoding(t *testing.T) {
	for _, s := range []*jsonschema.Schema{
		nil,
		{},
		{Not: &jsonschema.Schema{}},
		{Not: &jsonschema.Schema{Type: "string"}},
		{Not: &jsonschema.Schema{}, Type: "object"},
		{Not: &jsonschema.Schema{}, Description: "x"},
		{Not: &jsonschema.Schema{Properties: map[string]*jsonschema.Schema{}}},
		{Type: "object"},
	} {
		want := false
		if s != nil {
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			want = string(b) == "false"
		}
		if got := isFalseSchema(s); got != want {
			t.Errorf("isFalseSchema(%+v) = %v, its encoding says %v", s, got, want)
		}
	}
}

// BenchmarkStructuredCallFreshGoroutine makes one structured call per
// operation on a goroutine of its own, against a loopback server, as a
// graph task of a research run does: the call's CPU including the growth of
// the new goroutine's stack.
func BenchmarkStructuredCallFreshGoroutine(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","model":"fake","choices":[{"index":0,"message":{"role":"assistant","content":"{\"query\":[\"q\"],\"rationale\":\"r\"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`)
	}))
	defer srv.Close()
	m, err := New(Config{APIKey: "k", BaseURL: srv.URL + "/v1", Model: "fake", Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	msgs := []schemas.Message{schemas.SystemMessage("You are a research assistant."), schemas.UserMessage("How do Go iterators work?")}
	errs := make(chan error)
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		go func() {
			_, err := llm.Structured[schemas.SearchQueryList](context.Background(), m, msgs)
			errs <- err
		}()
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the CPU time (user and system) the process has used: the
// server's included, and unlike ns/op, not the time spent waiting for a
// core on a busy machine.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
