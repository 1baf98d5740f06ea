package openai

import (
	"context"
	"encoding/json"
	"testing"

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
