package citation

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// issue23Gathered is what the cases of issue 23 were gathered from: one
// page under four spellings among them.
var issue23Gathered = []Source{
	{Label: "uefa", ShortURL: ShortURL(1, 8), URL: "https://www.uefa.com/euro2024/", Title: "uefa.com"},
	{Label: "wikipedia", ShortURL: ShortURL(1, 9), URL: "https://en.wikipedia.org/wiki/Go_(programming_language)", Title: "Go (programming language)"},
	{Label: "go", ShortURL: ShortURL(1, 10), URL: "https://go.dev/doc", Title: "Documentation"},
	{Label: "example", ShortURL: ShortURL(2, 0), URL: "https://example.com/page/", Title: "A page"},
	{Label: "example", ShortURL: ShortURL(2, 1), URL: "https://example.com/page?utm_source=x&utm_medium=y", Title: "A page"},
	{Label: "example", ShortURL: ShortURL(2, 2), URL: "https://example.com/page#frag", Title: "A page"},
	{Label: "example", ShortURL: ShortURL(2, 3), URL: "http://Example.com:80/page", Title: "A page"},
}

const (
	uefaURL = "https://www.uefa.com/euro2024/"
	wikiURL = "https://en.wikipedia.org/wiki/Go_(programming_language)"
	goURL   = "https://go.dev/doc"
	pageURL = "https://example.com/page/"
)

// TestFinalizeIssue23 holds the cases of issue 23, each as the issue gave
// it, with what Finalize now makes of it.
func TestFinalizeIssue23(t *testing.T) {
	tests := []struct {
		name, answer, want string
		cited              []string
		dropped            int
	}{
		// Item 1: no foreign link survives in any rendering.
		{"N1 escaped bracket in the label", "See [docs\\]](https:evil.example) now.", "See docs\\] now.", nil, 1},
		{"N2 protocol-relative definition", "Click [here][1].\n\n[1]: //evil.example/x\n", "Click here.\n\n", nil, 1},
		{"N2 scheme without slashes", "Click [here][1].\n\n[1]: https:evil.example\n", "Click here.\n\n", nil, 1},
		{"N2 entity in the scheme", "Click [here][1].\n\n[1]: https&#58;//evil.example/x\n", "Click here.\n\n", nil, 1},
		{"N2 unused foreign definition", "Text.\n\n[x]: //evil.example/x\n", "Text.\n\n", nil, 1},
		{"N3 www autolink in emphasis", "Go to _www.evil.example_ now.", "Go to _`evil.example`_ now.", nil, 1},
		{"raw HTML anchor", `Look <a href="https://evil.example/">here</a> now.`, "Look \\<a href=\"`evil.example`\">here</a> now.", nil, 2},
		{"raw HTML block", "<div><a href=\"//evil.example/\">x</a></div>\n\nText.", "\\<div>\\<a href=\"//evil.example/\">x</a></div>\n\nText.", nil, 2},
		{"image", "Look ![p](https://evil.example/p.png) and ![q](//evil.example/q.png).", "Look.", nil, 2},
		{"image with an entity scheme", "Look ![p](https&#58;//evil.example/p.png) here.", "Look here.", nil, 1},
		// Item 2: sources are pages, not spellings.
		{"N5 one page under four spellings",
			"Fact [a](https://vertexaisearch.cloud.google.com/id/2-0) [b](https://vertexaisearch.cloud.google.com/id/2-1) [c](https://vertexaisearch.cloud.google.com/id/2-2) [d](https://vertexaisearch.cloud.google.com/id/2-3).",
			"Fact [1](" + pageURL + ").", []string{pageURL}, 0},
		{"N5 a link to another spelling of a gathered page", "See [it](http://example.com/page?fbclid=1).", "See it [1](" + pageURL + ").", []string{pageURL}, 0},
		// Item 3: words are never lost.
		{"N6 gathered URL with parentheses in prose", "Read " + wikiURL + " today.", "Read [1](" + wikiURL + ") today.", []string{wikiURL}, 0},
		{"N6 ungathered URL with parentheses", "Read https://evil.example/wiki/Go_(x) today.", "Read `evil.example` today.", nil, 1},
		{"N6 URL in parentheses", "Go (see " + goURL + ") is fine.", "Go (see [1](" + goURL + ")) is fine.", []string{goURL}, 0},
		{"N10 anchor text kept", "See [the docs](" + goURL + ") now.", "See the docs [1](" + goURL + ") now.", []string{goURL}, 0},
		{"D5 anchor equal to a source label", "Mehr unter [uefa](https://evil.example/) und mehr.", "Mehr unter uefa und mehr.", nil, 1},
		{"D5 anchor equal to the host", "Mehr unter [evil](https://evil.example/) und mehr.", "Mehr unter evil und mehr.", nil, 1},
		{"D1 short URL followed by a sentence", "fact https://vertexaisearch.cloud.google.com/id/1-8.Next sentence.", "fact [1](" + uefaURL + ").Next sentence.", []string{uefaURL}, 0},
		{"no and and and",
			"As reported by [a](https://vertexaisearch.cloud.google.com/id/9-9) and [b](https://vertexaisearch.cloud.google.com/id/9-8) and [c](https://vertexaisearch.cloud.google.com/id/9-7) and more.",
			"As reported by and more.", nil, 3},
		{"conjunction before a kept citation",
			"Fact [a](https://vertexaisearch.cloud.google.com/id/9-9), [uefa](https://vertexaisearch.cloud.google.com/id/1-8) and [c](https://vertexaisearch.cloud.google.com/id/9-7).",
			"Fact [1](" + uefaURL + ").", []string{uefaURL}, 2},
		{"N7 bold Sources list",
			"Spain won [uefa](https://vertexaisearch.cloud.google.com/id/1-8).\n\n**Sources:**\n- [uefa](https://vertexaisearch.cloud.google.com/id/1-8)\n- https://evil.example/\n",
			"Spain won [1](" + uefaURL + ").", []string{uefaURL}, 1},
		{"N7 heading References list",
			"Spain won [S1](" + uefaURL + ").\n\n---\n\n### References\n\n1. UEFA — " + uefaURL + "\n2. [Go](" + goURL + ")\n",
			"Spain won [1](" + uefaURL + ").", []string{uefaURL}, 0},
		{"N7 a section called Sources with prose stays",
			"Intro [uefa](" + uefaURL + ").\n\n## Sources\n\nWe read the tournament pages.\n",
			"Intro [1](" + uefaURL + ").\n\n## Sources\n\nWe read the tournament pages.\n", []string{uefaURL}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Finalize(tt.answer, issue23Gathered)
			assert.Equal(t, tt.want, got.Text)
			var cited []string
			for _, s := range got.Sources {
				cited = append(cited, s.URL)
			}
			assert.Equal(t, tt.cited, cited)
			assert.Equal(t, tt.dropped, got.Dropped)
			assert.Empty(t, foreignLinks(got.Text, issue23Gathered), "a foreign link survived")
			again := Finalize(got.Text, issue23Gathered)
			assert.Equal(t, got.Text, again.Text, "Finalize is idempotent")
			assert.Zero(t, again.Dropped)
		})
	}
}

// foreignLinks lists what a CommonMark + GFM renderer (goldmark) would make
// a link of in text and that resolves to no gathered source.
func foreignLinks(text string, gathered []Source) []string {
	return checkRendered(text, newIndex(gathered))
}
