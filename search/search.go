package search

import (
	"context"
	"time"
)

// Searcher finds web pages (or local passages) for a query. Implementations
// are safe for concurrent use.
type Searcher interface {
	// Search returns up to opts.MaxResults results, best first, deduplicated
	// by normalised URL. No results is not an error: it returns an empty slice.
	Search(ctx context.Context, query string, opts Options) ([]Result, error)
	// Name identifies the provider in errors and logs ("searxng", "tavily", …).
	Name() string
}

// Skipper is a Searcher that left documents out of what it searches — a
// local corpus skips the files it cannot index — so that a caller can say
// so rather than let them go missing silently.
type Skipper interface {
	// Skipped describes each document left out, with why, one a string
	// ("notes/scan.pdf: unsupported format (…)").
	Skipped() []string
}

// Options tune one search. The zero value asks for the provider's defaults.
type Options struct {
	MaxResults int    // 0: DefaultMaxResults
	Language   string // BCP 47 code such as "en" or "de"; "" lets the provider choose
	// TimeRange restricts results by age: "day", "week", "month", "year" or "".
	TimeRange string
}

// DefaultMaxResults is the number of results asked for when Options.MaxResults is 0.
const DefaultMaxResults = 5

// Result is one hit.
type Result struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet,omitempty"`
	// Content is the page's full text when the provider returns it (Tavily's
	// raw_content, a local passage); empty when only a snippet is known.
	Content   string    `json:"content,omitempty"`
	Score     float64   `json:"score,omitempty"`
	Published time.Time `json:"published,omitzero"`
	// Provider is the Searcher that found it.
	Provider string `json:"provider,omitempty"`
}
