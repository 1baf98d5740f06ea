package research_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/search"
)

// budgetReader is a PageReader with ReadUpTo, like *search.Reader.
type budgetReader struct {
	mu    sync.Mutex
	asked []int
}

func (r *budgetReader) Read(ctx context.Context, url string) (*search.Page, error) {
	return r.ReadUpTo(ctx, url, 0)
}

func (r *budgetReader) ReadUpTo(_ context.Context, url string, maxChars int) (*search.Page, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, maxChars)
	return &search.Page{URL: url, Content: "page text of " + url, Partial: true}, nil
}

func TestSearchBackendReadsPagesUpToTheSourceBudget(t *testing.T) {
	searcher := fakeSearcher{results: map[string][]search.Result{"q": {
		{Title: "A", URL: "https://a.example/", Snippet: "a"},
		{Title: "B", URL: "https://b.example/", Snippet: "b"},
	}}}
	for _, tc := range []struct{ set, want int }{{0, research.DefaultMaxSourceChars}, {1234, 1234}} {
		reader := &budgetReader{}
		b := &research.SearchBackend{Searcher: searcher, Reader: reader, MaxSourceChars: tc.set}
		m := fake.New(fake.Text("A says so [S1]."))
		f, err := b.Research(context.Background(), m, research.Query{Text: "q"})
		require.NoError(t, err)
		assert.Equal(t, []int{tc.want, tc.want}, reader.asked, "each page is read for the characters the prompt keeps")
		assert.Contains(t, m.Calls()[0].LastMessage().Content, "page text of https://a.example/")
		require.Len(t, f.Sources, 2)
	}
}
