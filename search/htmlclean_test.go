package search

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
)

func TestStripHTML(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"scripts, styles, comments", `<p>a<script>var x = "<p>no</p>";</script>b<style>p{}</style>c<!-- note --></p>`, `<p>abc</p>`},
		{"self-closing script still runs to its end tag", `<p>a<script/>x()</script>b</p>`, `<p>ab</p>`},
		{"JSON-LD is metadata", `<script type="application/ld+json">{"a":1}</script><p>t</p>`, `<script type="application/ld+json">{"a":1}</script><p>t</p>`},
		{"svg with its own style and title", `<p>a<svg><title>icon</title><style>.x{}</style><path d="M0"/><svg></svg></svg>b</p>`, `<p>ab</p>`},
		{"HTML breaks out of an unclosed svg", `<svg><path/><p>kept</p>`, `<p>kept</p>`},
		{"font with color breaks out", `<svg><font color=red>kept</font>`, `<font color=red>kept</font>`},
		{"raw text is not markup", `<title>a <script>b</script></title><textarea><!-- c --><svg></textarea>`, `<title>a <script>b</script></title><textarea><!-- c --><svg></textarea>`},
		{"iframes", `<p>a<iframe src="/x"><p>fallback</p></iframe>b</p>`, `<p>ab</p>`},
		{"unclosed script drops the rest", `<p>a</p><script>never closed <p>b</p>`, `<p>a</p>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, cut := stripHTML(tc.in, scan{})
			assert.Equal(t, tc.want, out)
			assert.False(t, cut)
		})
	}
}

func TestStripHTMLScan(t *testing.T) {
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "<p>paragraph %03d has some words</p>\n", i)
	}
	doc := b.String()
	out, cut := stripHTML(doc, scan{text: 200, tags: 1000, bytes: 1 << 20})
	assert.True(t, cut)
	assert.Contains(t, out, "paragraph 007")
	assert.NotContains(t, out, "paragraph 010", "stops after 200 characters of text")
	assert.True(t, strings.HasSuffix(out, "has some words"), "cuts before a tag, not in text: %q", out[max(0, len(out)-30):])

	out, cut = stripHTML(doc, scan{text: 1 << 20, tags: 20, bytes: 1 << 20})
	assert.True(t, cut)
	assert.NotContains(t, out, "paragraph 021", "stops after 20 elements")

	out, cut = stripHTML(doc, scanFor(1<<20))
	assert.False(t, cut)
	assert.Equal(t, doc, out)
}

// TestReadUpToBigPage reads a 500 KB article page for a 6,000-character
// summary and whole: both start with the article, without navigation or
// script text; the summary read stops soon after 6,000 characters.
func TestReadUpToBigPage(t *testing.T) {
	s := newSite(t, map[string]page{"/story": {contentType: "text/html; charset=utf-8", body: []byte(bigArticlePage(500 << 10))}})
	r := newTestReader(t, ReaderConfig{})
	ctx := context.Background()

	short, err := r.ReadUpTo(ctx, s.URL+"/story", 6000)
	require.NoError(t, err)
	whole, err := r.Read(ctx, s.URL+"/story")
	require.NoError(t, err)
	assert.Equal(t, 2, s.count("/story"), "a whole read does not take a partial page from the cache")

	for _, p := range []*Page{short, whole} {
		c := p.Content
		assert.Contains(t, p.Title, "Consensus at Scale")
		assert.Equal(t, "Grace Hopper", p.Byline)
		assert.Equal(t, 2025, p.Published.Year())
		for i := range 5 {
			assert.True(t, strings.Contains(c, fmt.Sprintf("Lead paragraph %d: production clusters tune", i)), "lead paragraph %d", i)
		}
		assert.True(t, strings.Contains(c, "[timeouts]("+s.URL+"/glossary/0)"), "links are absolute")
		assert.True(t, strings.Contains(c, "## Part 1: leader election"))
		for _, junk := range []string{"NavJunk", "SCRIPTJUNK", "window.__", "querySelector", "margin:", "Comment 3:", "<path", "Search"} {
			assert.False(t, strings.Contains(c, junk), "%q is not article text", junk)
		}
		assert.True(t, utf8.ValidString(c))
	}
	assert.True(t, short.Partial)
	assert.False(t, whole.Partial)
	n := utf8.RuneCountInString(short.Content)
	assert.Greater(t, n, 6000, "a caller clipping at its budget can tell the page goes on")
	assert.Less(t, n, 12000, "conversion stops soon after the budget (link targets are not counted)")
	assert.True(t, strings.HasPrefix(whole.Content, short.Content), "the partial content is the whole content's beginning")
	assert.True(t, strings.Contains(whole.Content, "| cluster-7 | 5     | 25 ms      |"), "tables survive")
	assert.Greater(t, len(whole.Content), 200_000)
}

func TestReadUpToCache(t *testing.T) {
	s := newSite(t, map[string]page{
		"/story": {contentType: "text/html", body: []byte(bigArticlePage(200 << 10))},
		"/small": {contentType: "text/html", body: []byte(articleHTML)},
		"/plain": {contentType: "text/plain", body: []byte(strings.Repeat("all of it. ", 2000))},
	})
	r := newTestReader(t, ReaderConfig{})
	ctx := context.Background()
	read := func(path string, maxChars int) *Page {
		t.Helper()
		p, err := r.ReadUpTo(ctx, s.URL+path, maxChars)
		require.NoError(t, err)
		return p
	}
	p := read("/story", 4000)
	require.True(t, p.Partial)
	assert.False(t, read("/story", 3000).Partial && s.count("/story") != 1, "a shorter read is served from the cache")
	assert.Equal(t, 1, s.count("/story"))
	assert.True(t, read("/story", 9000).Partial)
	assert.Equal(t, 2, s.count("/story"), "a longer read reads the page again")
	assert.False(t, read("/story", 0).Partial)
	assert.Equal(t, 3, s.count("/story"))
	assert.False(t, read("/story", 5000).Partial, "the whole page serves every later read")
	assert.Equal(t, 3, s.count("/story"))

	small := read("/small", 6000)
	assert.False(t, small.Partial, "a page shorter than the budget is whole")
	assert.Contains(t, small.Content, "| Term | Leader |")
	read("/small", 0)
	assert.Equal(t, 1, s.count("/small"))

	plain := read("/plain", 100)
	assert.False(t, plain.Partial, "only HTML is converted partially")
	assert.Len(t, plain.Content, len(strings.TrimSpace(strings.Repeat("all of it. ", 2000))))
}

// visibleText is the pruned text of a document as the reader sees it,
// without white space.
func visibleText(doc string) string {
	n, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		return "parse error"
	}
	prune(n, false)
	return strings.Join(strings.Fields(textOf(n)), "")
}

// FuzzStripHTML checks that stripping before parsing loses no text that
// the parse-then-prune path keeps, and adds none. White space may differ:
// text directly inside a <table> is moved out of it in runs, and a dropped
// <script> can join two runs.
func FuzzStripHTML(f *testing.F) {
	f.Add(articleHTML)
	f.Add(`<p>a<svg><p>b</svg>c<script>d</script><template>e</template>`)
	f.Add(`<select><textarea><script>x</script></textarea></select><p>after`)
	f.Add(`<table><tr><td>a<script>b</script><svg><td>c</table>`)
	f.Add(`<math><mi>x</mi></math><p>y<!-- z -->`)
	f.Fuzz(func(t *testing.T, doc string) {
		doc = strings.ToValidUTF8(doc, "\uFFFD")
		out, cut := stripHTML(doc, scan{})
		if cut {
			t.Fatal("cut without a scan")
		}
		if got, want := visibleText(out), visibleText(doc); got != want {
			t.Fatalf("text after stripping differs:\n got %q\nwant %q\nstripped %q", got, want, out)
		}
	})
}

func FuzzHTMLToMarkdownUpTo(f *testing.F) {
	f.Add(articleHTML, 100)
	f.Add("<p>one</p><p>two</p><table><tr><td>a<td>b</table>", 3)
	r, err := NewReader(ReaderConfig{})
	if err != nil {
		f.Fatal(err)
	}
	base, err := url.Parse("https://example.com/dir/page")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc string, maxChars int) {
		maxChars = 1 + abs(maxChars)%5000
		p, err := r.convertHTML(context.Background(), doc, base, maxChars)
		if err != nil {
			return
		}
		if strings.Contains(p.Content, "javascript:") && !strings.Contains(doc, "javascript:") {
			t.Fatalf("a javascript: link appeared from nowhere")
		}
		if !utf8.ValidString(p.Content) {
			t.Fatalf("invalid UTF-8 in content")
		}
		if p.Partial && utf8.RuneCountInString(p.Content) <= maxChars && len(doc) < minScanChars {
			t.Fatalf("partial content of %d characters for a budget of %d", utf8.RuneCountInString(p.Content), maxChars)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
