package local

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/deepgraph/deepgraph/search"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlanMatch(t *testing.T) {
	three := parsedQuery{phrase: "aa bb cc", terms: []string{"aa", "bb", "cc"}}
	full := `"aa bb cc" OR "aa" OR "bb" OR "cc"`
	tests := []struct {
		name   string
		q      parsedQuery
		df     []int
		budget int
		want   []matchStep
	}{
		{"rare terms: exhaustive", three, []int{10, 20, 30}, 100, []matchStep{{match: full}}},
		{"exactly the budget: exhaustive", three, []int{50, 25, 25}, 100, []matchStep{{match: full}}},
		{"one word: exhaustive however common", parsedQuery{terms: []string{"aa"}}, []int{1000}, 100,
			[]matchStep{{match: `"aa"`}}},
		{"common terms count only on passages with a rare one", three, []int{101, 5, 60}, 100,
			[]matchStep{{match: `("bb" OR "cc") AND (` + full + `)`}}},
		{"candidates stop at the budget", three, []int{101, 5, 96}, 100,
			[]matchStep{{match: `("bb") AND (` + full + `)`}}},
		{"unmatched terms are candidates", three, []int{101, 0, 101}, 100,
			[]matchStep{{match: `("bb") AND (` + full + `)`}}},
		{"all common: conjunctions, most common dropped first", three, []int{300, 101, 200}, 100, []matchStep{
			{filter: `"bb" AND "cc" AND "aa"`, match: `("bb" AND "cc" AND "aa") AND (` + full + `)`},
			{filter: `"bb" AND "cc"`, match: `("bb" AND "cc") AND (` + full + `)`},
			{filter: `"bb"`, match: `("bb") AND (` + full + `)`},
		}},
		{"ties keep query order", parsedQuery{terms: []string{"aa", "bb"}}, []int{101, 101}, 100, []matchStep{
			{filter: `"aa" AND "bb"`, match: `("aa" AND "bb") AND ("aa" OR "bb")`},
			{filter: `"aa"`, match: `("aa") AND ("aa" OR "bb")`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, planMatch(tt.q, tt.df, tt.budget))
		})
	}
}

// referenceSearch runs the exhaustive expression, as Search did before
// candidate budgets: every passage holding a query term is ranked.
func referenceSearch(t *testing.T, ix *Index, query string, n int) []string {
	t.Helper()
	match, err := buildMatch(query)
	require.NoError(t, err)
	rs, err := ix.query(context.Background(), query, searchAll, []any{match, n}, n)
	require.NoError(t, err)
	return resultURLs(rs)
}

func resultURLs(rs []search.Result) []string {
	urls := make([]string, len(rs))
	for i, r := range rs {
		urls[i] = r.URL
	}
	return urls
}

// TestSearchContentWordsUnchanged checks on a generated Zipf corpus (the
// benchmark's, 400 files, 3,200 passages, with the candidate budget
// scaled to it) that content-word queries return exactly the passages the
// exhaustive search returns, and that planted passages holding a query's
// content words come first even when common words in the query make
// Search rank a smaller candidate set.
func TestSearchContentWordsUnchanged(t *testing.T) {
	c := newCorpus(t)
	bc := genBigCorpus(t, c.root, 400)
	// Planted passages: two content words that occur nowhere else, in a
	// section full of common words.
	for i := range 10 {
		c.write(fmt.Sprintf("planted/p%d.md", i), fmt.Sprintf(
			"# Planted %d\n\n## Notes\n\nThe water of the people have not come to xqneedle%d and it will be time.\n\n## Details\n\nThe first way about zqpin%d is to know what they said about new work.\n",
			i, i, i))
	}
	ix := c.open()
	passages := ix.LastRefresh().Passages
	require.Greater(t, passages, 3000)
	ix.budget = passages * defaultCandidateBudget / 160_000

	ctx := context.Background()
	checked := 0
	for _, q := range bc.queries {
		if q.kind != "content" && q.kind != "short" {
			continue
		}
		rs, err := ix.Search(ctx, q.text, search.Options{MaxResults: 5})
		require.NoError(t, err)
		want := referenceSearch(t, ix, q.text, 5)
		if len(want) > 0 {
			checked++
		}
		assert.Equal(t, want, resultURLs(rs), "query %q", q.text)
	}
	require.Greater(t, checked, 20, "most content queries match something")

	common := bc.vocab[8:40]
	commonOnly := 0
	for i := range 10 {
		for _, q := range []string{
			fmt.Sprintf("xqneedle%d", i),
			fmt.Sprintf("%s %s xqneedle%d %s", common[i], common[i+1], i, common[i+2]),
			fmt.Sprintf("What does %s have to do with xqneedle%d and %s?", common[i+3], i, common[i+4]),
		} {
			rs, err := ix.Search(ctx, q, search.Options{MaxResults: 5})
			require.NoError(t, err)
			require.NotEmpty(t, rs, "query %q", q)
			assert.Contains(t, rs[0].URL, fmt.Sprintf("planted/p%d.md#", i), "query %q", q)
			assert.Contains(t, rs[0].Content, fmt.Sprintf("xqneedle%d", i), "query %q", q)
		}
		// The planted file's other passage holds a rare word too.
		rs, err := ix.Search(ctx, fmt.Sprintf("how %s %s zqpin%d", common[i], common[i+5], i), search.Options{MaxResults: 5})
		require.NoError(t, err)
		require.NotEmpty(t, rs)
		assert.Contains(t, rs[0].Content, fmt.Sprintf("zqpin%d", i))
		pq, err := parseQuery(fmt.Sprintf("%s %s xqneedle%d", common[i], common[i+1], i))
		require.NoError(t, err)
		if planned := ix.plan(t, pq); len(planned) == 1 && strings.HasPrefix(planned[0].match, "(") {
			commonOnly++
		}
	}
	assert.Positive(t, commonOnly, "the common words exceed the scaled budget, so the candidate path is tested")
}

// plan counts the terms of q as Search does and returns its plan.
func (ix *Index) plan(t *testing.T, q parsedQuery) []matchStep {
	t.Helper()
	df := make([]int, len(q.terms))
	for i, term := range q.terms {
		n, err := ix.countMatches(context.Background(), quote(term), ix.budget+1)
		require.NoError(t, err)
		df[i] = n
	}
	return planMatch(q, df, ix.budget)
}

// TestSearchCommonWordsOnly: a query made only of words found in most
// passages returns the passages holding all of them first, and still
// returns results when no passage holds them all.
func TestSearchCommonWordsOnly(t *testing.T) {
	c := newCorpus(t)
	fillers := []string{"alpha beta gamma", "alpha beta delta", "alpha gamma delta", "beta gamma delta"}
	for i := range 200 {
		c.write(fmt.Sprintf("d/f%03d.md", i), fmt.Sprintf("# File %d\n\nSome %s words here, number w%d.\n", i, fillers[i%4], i))
	}
	c.write("d/all.md", "# All\n\nalpha beta gamma delta together.\n")
	c.write("d/all2.md", "# All two\n\nthe delta and gamma and beta and alpha.\n")
	ix := c.open()
	ix.budget = 40 // every filler word is "common": in 150 of 202 passages
	ctx := context.Background()

	rs, err := ix.Search(ctx, "alpha beta gamma delta", search.Options{MaxResults: 2})
	require.NoError(t, err)
	require.Len(t, rs, 2)
	got := []string{c.rel(t, rs[0]), c.rel(t, rs[1])}
	assert.ElementsMatch(t, []string{"d/all.md", "d/all2.md"}, got, "the two passages with every word")

	// Asking for more than the conjunction matches relaxes it.
	rs, err = ix.Search(ctx, "alpha beta gamma delta", search.Options{MaxResults: 10})
	require.NoError(t, err)
	require.Len(t, rs, 10)
	for _, r := range rs[2:] {
		n := 0
		for _, w := range []string{"alpha", "beta", "gamma", "delta"} {
			if strings.Contains(r.Content, w) {
				n++
			}
		}
		assert.Equal(t, 3, n, "after the passages with all four words come those with three: %q", r.Content)
	}

	// No passage holds both "number" and "together": still results.
	rs, err = ix.Search(ctx, "alpha number together", search.Options{MaxResults: 5})
	require.NoError(t, err)
	assert.NotEmpty(t, rs)
}
