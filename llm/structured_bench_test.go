package llm_test

import (
	"context"
	"testing"

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
