package citation

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	urlA = "https://example.com/a"
	urlB = "https://example.org/b"
	urlC = "https://news.example.net/c"
)

func src(label string, q, i int, u string) Source {
	return Source{Label: label, ShortURL: ShortURL(q, i), URL: u, Title: label + ".com"}
}

func TestFinalize(t *testing.T) {
	a := src("a", 1, 1, urlA)
	b := src("b", 1, 10, urlB)
	c := src("c", 0, 0, urlC)
	aAgain := src("a2", 3, 0, urlA) // the same page found by another query
	gathered := []Source{a, b, c, aAgain}

	tests := []struct {
		name        string
		answer      string
		gathered    []Source
		wantText    string
		wantSources []Source
		wantDropped int
	}{
		{
			name:     "empty answer",
			answer:   "",
			gathered: gathered,
			wantText: "",
		},
		{
			name:     "no citations",
			answer:   "Nothing cited here.",
			gathered: gathered,
			wantText: "Nothing cited here.",
		},
		{
			name:        "prefix collision: 1-10 is not 1-1",
			answer:      "Fact [b](https://vertexaisearch.cloud.google.com/id/1-10).",
			gathered:    gathered,
			wantText:    "Fact [1](" + urlB + ").",
			wantSources: []Source{b},
		},
		{
			name:        "prefix collision: both cited, 1-10 first",
			answer:      "X [b](https://vertexaisearch.cloud.google.com/id/1-10). Y [a](https://vertexaisearch.cloud.google.com/id/1-1).",
			gathered:    gathered,
			wantText:    "X [1](" + urlB + "). Y [2](" + urlA + ").",
			wantSources: []Source{b, a},
		},
		{
			name:        "prefix collision: bare tokens",
			answer:      "X https://vertexaisearch.cloud.google.com/id/1-10, Y https://vertexaisearch.cloud.google.com/id/1-1.",
			gathered:    gathered,
			wantText:    "X [1](" + urlB + "), Y [2](" + urlA + ").",
			wantSources: []Source{b, a},
		},
		{
			name:        "hallucinated short URL, the prompt's own example",
			answer:      "Claim [apnews](https://vertexaisearch.cloud.google.com/id/1-0). Other [c](https://vertexaisearch.cloud.google.com/id/0-0).",
			gathered:    gathered,
			wantText:    "Claim. Other [1](" + urlC + ").",
			wantSources: []Source{c},
			wantDropped: 1,
		},
		{
			name:        "malformed short URL is not a prefix match",
			answer:      "Claim [a](https://vertexaisearch.cloud.google.com/id/1-1/extra) end.",
			gathered:    gathered,
			wantText:    "Claim end.",
			wantDropped: 1,
		},
		{
			name:        "same page under two short URLs is one source",
			answer:      "A [a](https://vertexaisearch.cloud.google.com/id/3-0). B [a](https://vertexaisearch.cloud.google.com/id/1-1).",
			gathered:    gathered,
			wantText:    "A [1](" + urlA + "). B [1](" + urlA + ").",
			wantSources: []Source{a},
		},
		{
			name:        "link to an ungathered real URL",
			answer:      "Read [this](https://evil.example/steal?x=1) now. Fact [c](https://vertexaisearch.cloud.google.com/id/0-0).",
			gathered:    gathered,
			wantText:    "Read this now. Fact [1](" + urlC + ").",
			wantSources: []Source{c},
			wantDropped: 1,
		},
		{
			name:        "image to an ungathered URL",
			answer:      "Look ![pixel](https://evil.example/p.png?d=secret) here.",
			gathered:    gathered,
			wantText:    "Look here.",
			wantDropped: 1,
		},
		{
			name:        "link to a gathered real URL keeps its text and is cited",
			answer:      "See [the page](" + urlB + ").",
			gathered:    gathered,
			wantText:    "See the page [1](" + urlB + ").",
			wantSources: []Source{b},
		},
		{
			name:        "numbered by first appearance",
			answer:      "[c](https://vertexaisearch.cloud.google.com/id/0-0) then [a](https://vertexaisearch.cloud.google.com/id/1-1) then [c](https://vertexaisearch.cloud.google.com/id/0-0).",
			gathered:    gathered,
			wantText:    "[1](" + urlC + ") then [2](" + urlA + ") then [1](" + urlC + ").",
			wantSources: []Source{c, a},
		},
		{
			name:        "consecutive identical citations collapse",
			answer:      "Fact. [a](https://vertexaisearch.cloud.google.com/id/1-1) [a2](https://vertexaisearch.cloud.google.com/id/3-0), [a](" + urlA + ") [b](https://vertexaisearch.cloud.google.com/id/1-10)",
			gathered:    gathered,
			wantText:    "Fact. [1](" + urlA + ") [2](" + urlB + ")",
			wantSources: []Source{a, b},
		},
		{
			name:        "whitespace: dropped between kept citations",
			answer:      "Fact. [a](https://vertexaisearch.cloud.google.com/id/1-1) [x](https://vertexaisearch.cloud.google.com/id/9-9) [b](https://vertexaisearch.cloud.google.com/id/1-10) More.",
			gathered:    gathered,
			wantText:    "Fact. [1](" + urlA + ") [2](" + urlB + ") More.",
			wantSources: []Source{a, b},
			wantDropped: 1,
		},
		{
			name:        "whitespace: at line start and end",
			answer:      "[x](https://vertexaisearch.cloud.google.com/id/9-9) First line [y](https://vertexaisearch.cloud.google.com/id/9-8)\nSecond.",
			gathered:    gathered,
			wantText:    "First line\nSecond.",
			wantDropped: 2,
		},
		{
			name:     "whitespace: empty parentheses and separators",
			answer:   "One ([x](https://x.example/)). Two ([x](https://x.example/), [a](https://vertexaisearch.cloud.google.com/id/1-1)). Three ([a](https://vertexaisearch.cloud.google.com/id/1-1); [x](https://x.example/)).",
			gathered: gathered,
			// The text of a link to a page not gathered stays (issue 23, D5).
			wantText:    "One (x). Two (x, [1](" + urlA + ")). Three ([1](" + urlA + "); x).",
			wantSources: []Source{a},
			wantDropped: 3,
		},
		{
			name:        "every citation dropped",
			answer:      "[x](https://vertexaisearch.cloud.google.com/id/1-0)",
			gathered:    gathered,
			wantText:    "",
			wantDropped: 1,
		},
		{
			name:        "several short URLs in one link",
			answer:      "Fact [a, b](https://vertexaisearch.cloud.google.com/id/1-1, https://vertexaisearch.cloud.google.com/id/1-10).",
			gathered:    gathered,
			wantText:    "Fact [1](" + urlA + ") [2](" + urlB + ").",
			wantSources: []Source{a, b},
		},
		{
			name:        "several bare short URLs in one bracket",
			answer:      "Fact [https://vertexaisearch.cloud.google.com/id/1-1; https://vertexaisearch.cloud.google.com/id/1-10] and (https://vertexaisearch.cloud.google.com/id/0-0, https://vertexaisearch.cloud.google.com/id/7-7).",
			gathered:    gathered,
			wantText:    "Fact [1](" + urlA + ") [2](" + urlB + ") and [3](" + urlC + ").",
			wantSources: []Source{a, b, c},
			wantDropped: 1,
		},
		{
			name:        "scheme and host case variants of a short URL",
			answer:      "X [a](http://VertexAISearch.cloud.google.com/id/1-1) Y <https://vertexaisearch.cloud.google.com/id/1-10>.",
			gathered:    gathered,
			wantText:    "X [1](" + urlA + ") Y [2](" + urlB + ").",
			wantSources: []Source{a, b},
		},
		{
			name:        "autolinks",
			answer:      "Good <" + urlC + "> bad <https://evil.example/> mail <me@example.com> tag <br>.",
			gathered:    gathered,
			wantText:    "Good [1](" + urlC + ") bad mail <me@example.com> tag <br>.",
			wantSources: []Source{c},
			wantDropped: 1,
		},
		{
			name:        "link with a title and an angle-bracket destination",
			answer:      `X [a](<https://vertexaisearch.cloud.google.com/id/1-1> "A title") Y [b](` + urlB + ` 'T').`,
			gathered:    gathered,
			wantText:    "X [1](" + urlA + ") Y [2](" + urlB + ").",
			wantSources: []Source{a, b},
		},
		{
			name:        "reference-style links and their definitions",
			answer:      "Fact [uefa][1]. Other [bbc][]. Third [bbc].\n\n[1]: https://vertexaisearch.cloud.google.com/id/1-1\n[bbc]: https://vertexaisearch.cloud.google.com/id/1-10 \"BBC\"\n[unused]: https://evil.example/\n",
			gathered:    gathered,
			wantText:    "Fact [1](" + urlA + "). Other [2](" + urlB + "). Third [2](" + urlB + ").\n\n",
			wantSources: []Source{a, b},
			wantDropped: 1,
		},
		{
			name:        "footnotes",
			answer:      "Fact.[^1] Other.[^2]\n\n[^1]: [a](https://vertexaisearch.cloud.google.com/id/1-1)\n[^2]: https://vertexaisearch.cloud.google.com/id/5-5\n",
			gathered:    gathered,
			wantText:    "Fact.[1](" + urlA + ") Other.\n\n",
			wantSources: []Source{a},
			wantDropped: 1,
		},
		{
			name:     "brackets that are not links stay",
			answer:   "An array a[i] and [a note] and (an aside) and [S1].",
			gathered: gathered,
			wantText: "An array a[i] and [a note] and (an aside) and [S1].",
		},
		{
			name:        "short URL in link text is replaced with the link",
			answer:      "X [https://vertexaisearch.cloud.google.com/id/9-9](" + urlA + ").",
			gathered:    gathered,
			wantText:    "X [1](" + urlA + ").",
			wantSources: []Source{a},
		},
		{
			name:        "sources that cannot be restored",
			answer:      "X [js](https://vertexaisearch.cloud.google.com/id/4-0) Y [none](https://vertexaisearch.cloud.google.com/id/4-1) Z [self](https://vertexaisearch.cloud.google.com/id/4-2).",
			gathered:    []Source{src("js", 4, 0, "javascript:alert(1)"), src("none", 4, 1, ""), src("self", 4, 2, ShortURL(4, 2))},
			wantText:    "X Y Z.",
			wantDropped: 3,
		},
		{
			name:        "local corpus file URL",
			answer:      "Doc [guide](https://vertexaisearch.cloud.google.com/id/0-0).",
			gathered:    []Source{src("guide", 0, 0, "file:///docs/guide.md#L10")},
			wantText:    "Doc [1](file:///docs/guide.md#L10).",
			wantSources: []Source{src("guide", 0, 0, "file:///docs/guide.md#L10")},
		},
		{
			name:        "URL with unbalanced parentheses and a space is encoded",
			answer:      "Doc [w](https://vertexaisearch.cloud.google.com/id/0-0).",
			gathered:    []Source{src("w", 0, 0, "https://w.example/a_(b c")},
			wantText:    "Doc [1](https://w.example/a_%28b%20c).",
			wantSources: []Source{src("w", 0, 0, "https://w.example/a_(b c")},
		},
		{
			name:        "URL with balanced parentheses is kept",
			answer:      "Doc [w](https://vertexaisearch.cloud.google.com/id/0-0).",
			gathered:    []Source{src("w", 0, 0, "https://en.wikipedia.org/wiki/Go_(game)")},
			wantText:    "Doc [1](https://en.wikipedia.org/wiki/Go_(game)).",
			wantSources: []Source{src("w", 0, 0, "https://en.wikipedia.org/wiki/Go_(game)")},
		},
		{
			name:        "no gathered sources",
			answer:      "Fact [a](https://vertexaisearch.cloud.google.com/id/1-1), more.",
			wantText:    "Fact, more.",
			wantDropped: 1,
		},
		{
			name:        "multi-byte text around citations",
			answer:      "欧洲杯 [a](https://vertexaisearch.cloud.google.com/id/1-1)。決勝 [x](https://vertexaisearch.cloud.google.com/id/8-8)。",
			gathered:    gathered,
			wantText:    "欧洲杯 [1](" + urlA + ")。決勝。",
			wantSources: []Source{a},
			wantDropped: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Finalize(tt.answer, tt.gathered)
			assert.Equal(t, tt.wantText, got.Text)
			assert.Equal(t, tt.wantSources, got.Sources)
			assert.Equal(t, tt.wantDropped, got.Dropped)
			assert.NotContains(t, strings.ToLower(got.Text), shortHostPath)

			again := Finalize(got.Text, tt.gathered)
			assert.Equal(t, got.Text, again.Text, "Finalize is idempotent")
			assert.Equal(t, got.Sources, again.Sources)
			assert.Zero(t, again.Dropped)
		})
	}
}

// TestFinalizeMultiTurnShortURLClash: when two sources share a short URL
// (ids reused across turns), the first gathered wins, deterministically.
func TestFinalizeMultiTurnShortURLClash(t *testing.T) {
	first := src("old", 0, 0, urlA)
	second := src("new", 0, 0, urlB)
	got := Finalize("X [s](https://vertexaisearch.cloud.google.com/id/0-0).", []Source{first, second})
	require.Len(t, got.Sources, 1)
	assert.Equal(t, first, got.Sources[0])
	assert.Equal(t, "X [1]("+urlA+").", got.Text)
}

// TestFinalizeAdversarialJoins covers removals that join the text around
// them into a new link or a new short URL; later passes catch those.
func TestFinalizeAdversarialJoins(t *testing.T) {
	gathered := []Source{src("a", 1, 1, urlA)}
	tests := []struct {
		name, answer string
	}{
		{"link formed by a removal", "[a[x](https://evil.example/)](https://evil.example/2)"},
		{"bracket pair formed by a removal", "[a[x](y])](https://evil.example/)"},
		{"short URL formed by a removal", "see https://vertexaisearch[x](https://evil.example/).cloud.google.com/id/9-9 ok"},
		{"host path split by a removal", "vertexaisearch.cloud.goo[x](https://evil.example/)gle.com/id/1-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Finalize(tt.answer, gathered)
			assert.NotContains(t, strings.ToLower(got.Text), shortHostPath)
			assert.NotContains(t, got.Text, "evil")
			assert.Positive(t, got.Dropped)
			again := Finalize(got.Text, gathered)
			assert.Equal(t, got.Text, again.Text)
			assert.Zero(t, again.Dropped)
		})
	}
}

// TestFinalizeFallback forces the fallback by allowing a single pass on an
// input that needs two.
func TestFinalizeFallback(t *testing.T) {
	gathered := []Source{src("a", 1, 1, urlA)}
	in := "[a[x](y])](https://evil.example/) https://vertexaisearch.cloud.google.com/id/1-1 done"
	require.NotEqual(t, finalizePass(in, newIndex(gathered)).Text, finalizePass(finalizePass(in, newIndex(gathered)).Text, newIndex(gathered)).Text,
		"the input must need more than one pass")
	got := finalize(in, gathered, 1)
	assert.Equal(t, "ax(`evil.example`) [1]("+urlA+") done", got.Text)
	assert.Equal(t, []Source{src("a", 1, 1, urlA)}, got.Sources)
	assert.Equal(t, 2, got.Dropped)
	again := Finalize(got.Text, gathered)
	assert.Equal(t, got.Text, again.Text)
	assert.Zero(t, again.Dropped)
}

func TestDefang(t *testing.T) {
	ix := newIndex([]Source{src("a", 1, 1, urlA)})
	out, n := defang("a [b](c) <d> [1]("+urlA+") vertexaisearch.cloud.google.com/id/ [2](https://x.example/) vertexaisearch.cloud.go[ogle.com/id/", ix)
	assert.Equal(t, "a b(c) d [1]("+urlA+")  2(https://x.example/) ", out)
	assert.Equal(t, 2, n)
}
