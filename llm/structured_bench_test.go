package llm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// replyModel answers every call with the same text.
type replyModel string

func (m replyModel) Generate(context.Context, []schemas.Message, ...llm.Option) (*llm.Response, error) {
	return &llm.Response{Content: string(m)}, nil
}

// BenchmarkStructured is one structured call around a model that answers at
// once: what Structured itself costs per call (schema, request options,
// reading and validating the reply), without any provider's encoding.
func BenchmarkStructured(b *testing.B) {
	model := replyModel(`{"query":["go iterators","range over func"],"rationale":"two angles"}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := llm.Structured[schemas.SearchQueryList](ctx, model, question); err != nil {
			b.Fatal(err)
		}
	}
}

// schemaModel records the schema of each call and answers validly.
type schemaModel struct{ got chan *llm.Request }

func (m schemaModel) Generate(_ context.Context, _ []schemas.Message, opts ...llm.Option) (*llm.Response, error) {
	req := llm.NewRequest(opts...)
	m.got <- &req
	return &llm.Response{Content: `{"query":["q"],"rationale":"r"}`}, nil
}

// TestStructuredSchemaShared checks that concurrent structured calls for one
// type send the same schema, derived once, and that SchemaJSON gives what
// json.Marshal gives for it.
func TestStructuredSchemaShared(t *testing.T) {
	const n = 8
	m := schemaModel{got: make(chan *llm.Request, n)}
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := llm.Structured[schemas.SearchQueryList](context.Background(), m, question)
			errs <- err
		}()
	}
	var first *llm.Request
	for range n {
		require.NoError(t, <-errs)
		req := <-m.got
		if first == nil {
			first = req
		}
		assert.Same(t, first.Schema, req.Schema)
		assert.Equal(t, "SearchQueryList", req.SchemaName)
	}
	want, err := json.Marshal(first.Schema)
	require.NoError(t, err)
	got, err := llm.SchemaJSON(first.Schema)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))
	assert.Equal(t, string(want), string(got))
}
