package search

import (
	"fmt"
	"testing"
)

// BenchmarkPageKey is the page key of a typical search hit's URL (what
// citations and source counts compute for every gathered source).
func BenchmarkPageKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		PageKey("https://Example.com/docs/guide/?utm_source=x&b=2&a=1#intro")
	}
}

// BenchmarkFinish is what every search provider does with a page of 10
// raw hits: drop non-web URLs, deduplicate, cut.
func BenchmarkFinish(b *testing.B) {
	raw := make([]Result, 10)
	for i := range raw {
		raw[i] = Result{URL: fmt.Sprintf("https://site%d.example/page/%d?utm_medium=x", i%7, i), Title: " Title ", Snippet: "snippet"}
	}
	b.ReportAllocs()
	for b.Loop() {
		finish(raw, "searxng", 10)
	}
}
