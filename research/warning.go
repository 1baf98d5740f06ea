package research

import (
	"fmt"
	"slices"
	"strconv"
)

// WarningKind names a way a run degraded without failing.
type WarningKind string

// The kinds of Warning.
const (
	// WarningPagesRefused: pages the network guard refused to read
	// (private, loopback or metadata addresses); their snippets were used.
	WarningPagesRefused WarningKind = "pages_refused"
	// WarningPagesUnreadable: pages that could not be read (errors,
	// timeouts, unsupported content); their snippets were used.
	WarningPagesUnreadable WarningKind = "pages_unreadable"
	// WarningNoResults: queries whose search found nothing.
	WarningNoResults WarningKind = "no_results"
	// WarningSearchFailed: queries whose search failed after its retries;
	// the run went on with what the other searches found (Items: the
	// queries, with why).
	WarningSearchFailed WarningKind = "search_failed"
	// WarningFilesSkipped: files of a local corpus that were not indexed,
	// so no search could find them.
	WarningFilesSkipped WarningKind = "corpus_files_skipped"
	// WarningSnippetsOnly: no page of the run could be read, so the answer
	// rests on search snippets only.
	WarningSnippetsOnly WarningKind = "snippets_only"
)

// Warning says how a run degraded while going on: pages it could not read,
// searches that found nothing, corpus files it could not search. A
// Finding's warnings are about its query; a Report's sum them up per kind.
type Warning struct {
	Kind WarningKind `json:"kind"`
	// Message says it in a sentence, for people.
	Message string `json:"message"`
	// Count is how many pages, queries or files it is about.
	Count int `json:"count,omitempty"`
	// Query is the query it happened in (a Finding's warnings).
	Query string `json:"query,omitempty"`
	// Items are a few of the pages (URLs) or files (with why) concerned.
	Items []string `json:"items,omitempty"`
}

// Warner is a Backend with warnings about every run, not one query: a
// SearchBackend over a local corpus that skipped files.
type Warner interface {
	Warnings() []Warning
}

// maxWarningItems caps Warning.Items.
const maxWarningItems = 5

// newWarning builds a warning of kind about count things; query, when not
// empty, is the query it happened in.
func newWarning(kind WarningKind, count int, query string, items []string) Warning {
	w := Warning{Kind: kind, Count: count, Query: query, Items: items[:min(len(items), maxWarningItems)]}
	w.Message = warningText(kind, count)
	if query != "" {
		w.Message = strconv.Quote(query) + ": " + w.Message
	}
	return w
}

func warningText(kind WarningKind, n int) string {
	switch kind {
	case WarningPagesRefused:
		verb := "were"
		if n == 1 {
			verb = "was"
		}
		return fmt.Sprintf("%s %s refused by the network guard (private, loopback or metadata addresses); their search snippets were used instead", pages(n), verb)
	case WarningPagesUnreadable:
		return fmt.Sprintf("%s could not be read; their search snippets were used instead", pages(n))
	case WarningNoResults:
		if n == 1 {
			return "the search found no results"
		}
		return fmt.Sprintf("%d searches found no results", n)
	case WarningSearchFailed:
		if n == 1 {
			return "the search failed, and the run went on without it"
		}
		return fmt.Sprintf("%d searches failed, and the run went on without them", n)
	case WarningFilesSkipped:
		if n == 1 {
			return "1 file of the corpus was not indexed, so no search could find it"
		}
		return fmt.Sprintf("%d files of the corpus were not indexed, so no search could find them", n)
	case WarningSnippetsOnly:
		return "no page could be read: the answer is based on search snippets only"
	}
	return string(kind)
}

func pages(n int) string {
	if n == 1 {
		return "1 page"
	}
	return strconv.Itoa(n) + " pages"
}

// sumWarnings sums warnings up per kind, in the order kinds first appear:
// counts added, a few items kept, the message said again for the total.
func sumWarnings(ws []Warning) []Warning {
	var out []Warning
	for _, w := range ws {
		i := slices.IndexFunc(out, func(o Warning) bool { return o.Kind == w.Kind })
		if i < 0 {
			out = append(out, Warning{Kind: w.Kind})
			i = len(out) - 1
		}
		s := &out[i]
		s.Count += max(w.Count, 1)
		for _, it := range w.Items {
			if len(s.Items) < maxWarningItems && !slices.Contains(s.Items, it) {
				s.Items = append(s.Items, it)
			}
		}
	}
	for i := range out {
		out[i].Message = warningText(out[i].Kind, out[i].Count)
	}
	return out
}
