package citation

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// These tests cover the faults of issue 12 (items 5 and 6): untrusted URLs,
// URL token boundaries, anchor text, code, label syntax, Sources escaping.

func checkFinalize(t *testing.T, gathered []Source, answer, wantText string, wantDropped int) {
	t.Helper()
	got := Finalize(answer, gathered)
	assert.Equal(t, wantText, got.Text)
	assert.Equal(t, wantDropped, got.Dropped)
	again := Finalize(got.Text, gathered)
	assert.Equal(t, got.Text, again.Text, "Finalize is idempotent")
	assert.Zero(t, again.Dropped)
}

// TestFinalizeBareURLs: a bare URL that is not a gathered source is
// neutralised to its host in code; a gathered one becomes a citation.
func TestFinalizeBareURLs(t *testing.T) {
	gathered := []Source{src("a", 1, 8, urlA)}
	tests := []struct {
		name, answer, want string
		dropped            int
	}{
		{"http URL", "Please cite http://evil.example/ in the report.", "Please cite `evil.example` in the report.", 1},
		{"https URL with path, query and credentials", "See https://user:pw@Evil.example:8443/p?q=secret#f, then stop.", "See `evil.example`, then stop.", 1},
		{"www host", "Visit www.evil.example/x today.", "Visit `evil.example` today.", 1},
		{"other scheme", "Get ftp://files.evil.example/x now.", "Get `files.evil.example` now.", 1},
		{"URL without a host", "Odd http:// here.", "Odd here.", 1},
		{"in raw HTML", `<a href="https://evil.example/">x</a>`, "\\<a href=\"`evil.example`\">x</a>", 2},
		{"gathered URL becomes a citation", "As " + urlA + " says.", "As [1](" + urlA + ") says.", 0},
		{"gathered URL with www and no scheme", "See www.example.com/a.", "See `example.com`.", 1},
		{"words are not URLs", "awww.example is a typo; a :// b; www. alone.", "awww.example is a typo; a :// b; www. alone.", 0},
		{"e-mail address stays", "Write to me@example.com or mailto:me@example.com.", "Write to me@example.com or mailto:me@example.com.", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkFinalize(t, gathered, tt.answer, tt.want, tt.dropped) })
	}
}

// TestFinalizeURLBoundaries: a bare URL ends at CJK punctuation, full-width
// brackets and typographic quotes, and removing or citing it never eats
// the text around it.
func TestFinalizeURLBoundaries(t *testing.T) {
	gathered := []Source{src("a", 1, 8, urlA)}
	const short = "https://vertexaisearch.cloud.google.com/id/1-8"
	cite := "[1](" + urlA + ")"
	tests := []struct {
		name, answer, want string
		dropped            int
	}{
		{"no space, ideographic full stop", "东京是首都" + short + "。人口很多。", "东京是首都" + cite + "。人口很多。", 0},
		{"corner brackets", "他说「" + short + "」然后", "他说「" + cite + "」然后", 0},
		{"full-width parentheses", "x（" + short + "）y", "x（" + cite + "）y", 0},
		{"lenticular and book brackets", "【" + short + "】《" + short + "》", "【" + cite + "】《" + cite + "》", 0},
		{"low-high quotes", "„" + short + "“ ok", "„" + cite + "“ ok", 0},
		{"curly and guillemet quotes", "‘" + short + "’ “" + short + "” «" + short + "»", "‘" + cite + "’ “" + cite + "” «" + cite + "»", 0},
		{"ideographic comma and colon", short + "、" + short + "：" + short + "；", cite + "、" + cite + "：" + cite + "；", 0},
		{"question and exclamation", "真的？" + short + "！好", "真的？" + cite + "！好", 0},
		{"invented short URL keeps the text", "东京是首都https://vertexaisearch.cloud.google.com/id/9-9。人口很多。", "东京是首都。人口很多。", 1},
		{"ungathered URL before CJK text", "见http://evil.example/页面。好", "见`evil.example`页面。好", 1},
		{"ungathered URL in full-width brackets", "（https://evil.example/a）", "（`evil.example`）", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkFinalize(t, gathered, tt.answer, tt.want, tt.dropped) })
	}
}

// TestFinalizeKeepsAnchorText: a removed prose link keeps its words; a
// removed citation (a short URL, a number, a source label) goes whole.
func TestFinalizeKeepsAnchorText(t *testing.T) {
	gathered := []Source{src("a", 1, 8, urlA)}
	tests := []struct {
		name, answer, want string
		dropped            int
	}{
		{"prose link", "See [the Go spec](https://invented.example/) for details", "See the Go spec for details", 1},
		{"reference link", "See [the spec][s].\n\n[s]: https://invented.example/\n", "See the spec.\n\n", 1},
		{"nested link in the text", "See [the [a](https://vertexaisearch.cloud.google.com/id/1-8) spec](https://invented.example/).", "See the [1](" + urlA + ") spec.", 1},
		{"numbered citation goes", "Fact [3](https://invented.example/).", "Fact.", 1},
		// Issue 23 (D5): the text of a link to a page not gathered stays,
		// even when it is a host or a gathered source's label.
		{"host label stays", "Fact [invented](https://invented.example/x).", "Fact invented.", 1},
		{"gathered label stays", "Mehr unter [a](https://a.invented.example/x) und mehr.", "Mehr unter a und mehr.", 1},
		{"gathered label of the page cited is a marker", "Fact [a](" + urlA + ").", "Fact [1](" + urlA + ").", 0},
		{"short URL goes", "Fact [the spec](https://vertexaisearch.cloud.google.com/id/9-9).", "Fact.", 1},
		{"image goes", "Look ![a pixel](https://evil.example/p.png) here.", "Look here.", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkFinalize(t, gathered, tt.answer, tt.want, tt.dropped) })
	}
}

// TestFinalizeLeavesCode: links, URLs and labels in code spans, fenced and
// indented code blocks are left as they are — but only where a renderer
// surely shows code.
func TestFinalizeLeavesCode(t *testing.T) {
	gathered := []Source{src("a", 1, 8, urlA)}
	const short = "https://vertexaisearch.cloud.google.com/id/1-8"
	kept := []string{
		"Use `[x](https://evil.example/)` and `` " + short + " `` here.",
		"Run:\n\n```sh\ncurl https://evil.example/ [x](" + short + ")\n[1]: https://evil.example/\n```\n\nDone.",
		"~~~~\n[x](https://evil.example/)\n~~~\nstill code\n~~~~\n",
		"Code:\n\n    [x](https://evil.example/) " + short + "\n\tgo get https://evil.example/\n\nDone.",
		"    indented at the start [x](https://evil.example/)",
		"```\nunclosed fence at the top level [x](https://evil.example/)",
	}
	for _, in := range kept {
		t.Run(in, func(t *testing.T) { checkFinalize(t, gathered, in, in, 0) })
	}
	// Where a renderer may show a link, it is still checked.
	rewritten := []struct{ in, want string }{
		{"[click](https://evil.example/`)` x", "click` x"},
		{"Escaped \\` makes the paragraph prose: `[S1](https://evil.example/)`.", "Escaped \\` makes the paragraph prose: ``."},
		{"`a|b` [x](https://evil.example/) `c`", "`a|b` x `c`"},
		{"| `a | [x](https://evil.example/)` |", "| `a | x` |"},
		{"`multi\nline [x](https://evil.example/)`", "`multi\nline x`"},
		{"\\`` a ` [x](https://evil.example/) `", "\\`` a ` x `"},
		{"- item\n\n    [x](https://evil.example/) in the item", "- item\n\n    x in the item"},
		{"> quote\n\n    [x](https://evil.example/)", "> quote\n\n    x"},
		{"para\n    [x](https://evil.example/)", "para\n    x"},
		{"- a\n\n  ```\n  code\n[x](https://evil.example/)\n```", "- a\n\n  ```\n  code\nx\n```"},
	}
	for _, tt := range rewritten {
		t.Run(tt.in, func(t *testing.T) { checkFinalize(t, gathered, tt.in, tt.want, 1) })
	}
}

// TestFromLabelsOnlyAgreedSyntax: prompts ask for [S2]; a parenthesised
// (S2) in prose, and labels in code, stay text.
func TestFromLabelsOnlyAgreedSyntax(t *testing.T) {
	sources := []Source{ForResult("A", urlA, 0, 0), ForResult("B", urlB, 0, 1)}
	m := func(i int) string { return Marker([]Source{sources[i]}) }
	tests := []struct{ in, want string }{
		{"The (S2) region and the Galaxy (S2) phone.", "The (S2) region and the Galaxy (S2) phone."},
		{"Fact (S1, S2).", "Fact (S1, S2)."},
		{"Fact [S2].", "Fact" + m(1) + "."},
		{"Fact ([S2]).", "Fact (" + m(1)[1:] + ")."},
		{"Write `[S1]` to cite.", "Write `[S1]` to cite."},
		{"```\n[S1]\n```\n", "```\n[S1]\n```\n"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, _ := FromLabels(tt.in, sources)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestSourcesListEscapes: titles are escaped for Markdown with HTML
// neutralised, URLs are written so the link cannot end early.
func TestSourcesListEscapes(t *testing.T) {
	got := SourcesList([]Source{
		{Title: "<script>alert(1)</script> [a] *b* `c`\\", URL: "https://x.example/a b)c\\"},
		{Title: "two\nlines\r\n\tand\x00 control", URL: "https://y.example/(x"},
		{Title: "", Label: "", URL: "https://z.example/<q>"},
		{Title: "JS", URL: "javascript:alert(1)"},
	})
	want := "## Sources\n\n" +
		"1. [\\<script\\>alert(1)\\</script\\> \\[a\\] \\*b\\* \\`c\\`\\\\](https://x.example/a%20b%29c%5C)\n" +
		"2. [two lines and control](https://y.example/%28x)\n" +
		"3. [https://z.example/\\<q\\>](https://z.example/%3Cq%3E)\n" +
		"4. JS (`javascript:alert(1)`)\n"
	assert.Equal(t, want, got)
	for _, line := range strings.Split(strings.TrimSpace(got), "\n")[2:] {
		assert.NotRegexp(t, `(^|[^\\])<`, line, "an unescaped '<'")
	}
}
