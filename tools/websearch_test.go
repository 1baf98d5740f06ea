package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/search"
)

type fakeSearcher struct {
	results []search.Result
	err     error
	query   string
	opts    search.Options
}

func (f *fakeSearcher) Name() string { return "fake" }
func (f *fakeSearcher) Search(_ context.Context, q string, o search.Options) ([]search.Result, error) {
	f.query, f.opts = q, o
	if f.err != nil {
		return nil, f.err
	}
	n := min(len(f.results), o.MaxResults)
	return f.results[:n], nil
}

func manyResults(n int) []search.Result {
	rs := make([]search.Result, n)
	for i := range rs {
		rs[i] = search.Result{Title: fmt.Sprintf("Result %d", i+1), URL: fmt.Sprintf("https://example.com/%d", i+1), Snippet: "snippet"}
	}
	return rs
}

func TestWebSearch(t *testing.T) {
	published := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	fs := &fakeSearcher{results: []search.Result{
		{Title: "Go 1.24\n  released", URL: "https://go.dev/blog/go1.24", Snippet: "Go 1.24 adds\x1b[31m os.Root", Published: published},
		{Title: "", URL: "https://example.com/x", Content: strings.Repeat("long content ", 100)},
	}}
	tool, err := NewWebSearch(WebSearchOptions{Searcher: fs, Language: "en", MaxSnippetChars: 50})
	require.NoError(t, err)
	c, err := NewCollection(tool)
	require.NoError(t, err)

	res, err := c.Execute(context.Background(), call(WebSearchName, `{"query":"  go   os.Root ","time_range":"year"}`))
	require.NoError(t, err)
	require.False(t, res.Failed(), res.Error)
	assert.Equal(t, "go os.Root", fs.query)
	assert.Equal(t, search.Options{MaxResults: search.DefaultMaxResults, Language: "en", TimeRange: "year"}, fs.opts)
	assert.Contains(t, res.Output, `2 results for "go os.Root" (fake):`)
	assert.Contains(t, res.Output, "- Go 1.24 released\n  URL: https://go.dev/blog/go1.24\n  Published: 2024-05-01\n  Go 1.24 adds[31m os.Root\n")
	assert.NotRegexp(t, `\[\d+\]`, res.Output, "no numbering of its own: an agent labels the pages S1, S2, … across the run")
	assert.NotContains(t, res.Output, "\x1b")
	assert.Contains(t, res.Output, "- (untitled)\n  URL: https://example.com/x\n")
	assert.Contains(t, res.Output, "long content long content long content long conten…\n", "content stands in for a missing snippet, capped")

	res, err = c.Execute(context.Background(), call(WebSearchName, `{"query":"x","max_results":3}`))
	require.NoError(t, err)
	assert.Equal(t, 3, fs.opts.MaxResults)

	res, err = c.Execute(context.Background(), call(WebSearchName, `{"query":"x","max_results":11}`))
	require.NoError(t, err)
	assert.Contains(t, res.Error, `property "max_results": maximum`)
	res, _ = c.Execute(context.Background(), call(WebSearchName, `{"query":"x","time_range":"decade"}`))
	assert.Contains(t, res.Error, `property "time_range": enum`)
	res, _ = c.Execute(context.Background(), call(WebSearchName, `{"query":"  "}`))
	assert.Contains(t, res.Error, "the query is empty")
	res, _ = c.Execute(context.Background(), call(WebSearchName, fmt.Sprintf(`{"query":%q}`, strings.Repeat("q", 501))))
	assert.Contains(t, res.Error, "keep it under 500")

	fs.results = nil
	res, err = c.Execute(context.Background(), call(WebSearchName, `{"query":"nothing"}`))
	require.NoError(t, err)
	assert.False(t, res.Failed())
	assert.Contains(t, res.Output, `No results for "nothing"`)

	fs.err = fmt.Errorf("fake: %w", search.ErrRateLimited)
	res, err = c.Execute(context.Background(), call(WebSearchName, `{"query":"x"}`))
	require.ErrorIs(t, err, search.ErrRateLimited, "a provider failure is an infrastructure error")
	assert.Contains(t, res.Error, "web_search failed: fake: rate limited")
}

func TestWebSearchLimits(t *testing.T) {
	fs := &fakeSearcher{results: manyResults(30)}
	tool, err := NewWebSearch(WebSearchOptions{Searcher: fs, DefaultResults: 8, MaxResults: 20})
	require.NoError(t, err)
	p := tool.Parameters().Properties["max_results"]
	assert.Equal(t, 20.0, *p.Maximum)
	assert.Contains(t, p.Description, "1 to 20, default 8")
	assert.Contains(t, tool.Description(), "up to 20 results")
	res, err := tool.Run(context.Background(), []byte(`{"query":"x"}`))
	require.NoError(t, err)
	assert.Contains(t, res.Output, "- Result 8\n")
	assert.NotContains(t, res.Output, "Result 9")

	_, err = NewWebSearch(WebSearchOptions{})
	assert.ErrorContains(t, err, "Searcher is required")
}

func TestWebSearchCancelled(t *testing.T) {
	fs := &fakeSearcher{err: context.Canceled}
	tool, err := NewWebSearch(WebSearchOptions{Searcher: fs})
	require.NoError(t, err)
	_, err = tool.Run(context.Background(), []byte(`{"query":"x"}`))
	assert.True(t, errors.Is(err, context.Canceled))
}
