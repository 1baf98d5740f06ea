package local

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blockView is a block reduced to what tests compare.
type blockView struct {
	Start, End int
	Heading    int
	Text       string
}

func view(doc document) []blockView {
	var out []blockView
	for _, b := range doc.blocks {
		text := b.text()
		if b.heading > 0 {
			text = b.headingText
		}
		out = append(out, blockView{Start: b.startLine(), End: b.endLine(), Heading: b.heading, Text: text})
	}
	return out
}

func TestParseMarkdown(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		wantTitle string
		want      []blockView
	}{
		{
			name:      "headings and paragraphs",
			src:       "# Guide\n\nFirst para\nstill first.\n\n## Install *now*\n\nSecond.\n",
			wantTitle: "Guide",
			want: []blockView{
				{1, 1, 1, "Guide"},
				{3, 4, 0, "First para\nstill first."},
				{6, 6, 2, "Install *now*"},
				{8, 8, 0, "Second."},
			},
		},
		{
			name:      "fenced code keeps hashes and blank lines",
			src:       "Intro\n\n```sh\n# comment, not a heading\n\necho hi\n```\nAfter\n",
			wantTitle: "notes.md",
			want: []blockView{
				{1, 1, 0, "Intro"},
				{3, 7, 0, "```sh\n# comment, not a heading\n\necho hi\n```"},
				{8, 8, 0, "After"},
			},
		},
		{
			name:      "unclosed fence runs to the end",
			src:       "~~~\ncode\n# x\n",
			wantTitle: "notes.md",
			want:      []blockView{{1, 3, 0, "~~~\ncode\n# x"}},
		},
		{
			name:      "setext headings",
			src:       "Title Here\n==========\n\nSub\n---\ntext\n",
			wantTitle: "Title Here",
			want: []blockView{
				{1, 2, 1, "Title Here"},
				{4, 5, 2, "Sub"},
				{6, 6, 0, "text"},
			},
		},
		{
			name:      "front matter title wins, CRLF lines",
			src:       "---\r\ntitle: \"My Notes\"\r\ntags: [a]\r\n---\r\n# Heading\r\nbody\r\n",
			wantTitle: "My Notes",
			want: []blockView{
				{1, 4, 0, "---\ntitle: \"My Notes\"\ntags: [a]\n---"},
				{5, 5, 1, "Heading"},
				{6, 6, 0, "body"},
			},
		},
		{
			name:      "heading cleanup and closing hashes",
			src:       "### The `Open` [function](http://x) ###\n#NotAHeading\n",
			wantTitle: "notes.md",
			want: []blockView{
				{1, 1, 3, "The Open function"},
				{2, 2, 0, "#NotAHeading"},
			},
		},
		{
			name:      "four-space indent is code, not a heading",
			src:       "    # not heading\n",
			wantTitle: "notes.md",
			want:      []blockView{{1, 1, 0, "    # not heading"}},
		},
		{name: "empty", src: "", wantTitle: "notes.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := parseMarkdown(tt.src, "notes.md")
			assert.Equal(t, tt.wantTitle, doc.title)
			assert.Equal(t, tt.want, view(doc))
		})
	}
}

func TestParsePlain(t *testing.T) {
	doc := parsePlain("line one\nline two\n\n\n  indented para\n# not a heading in text\n", "a.txt")
	assert.Equal(t, "a.txt", doc.title)
	assert.Equal(t, []blockView{
		{1, 2, 0, "line one\nline two"},
		{5, 6, 0, "  indented para\n# not a heading in text"},
	}, view(doc))
}

func TestParseHTML(t *testing.T) {
	src := `<!DOCTYPE html>
<html>
<head>
  <title>The &amp; Page</title>
  <style>body { color: red }</style>
  <script>var secret = "not text";</script>
</head>
<body>
<nav><a href="/">Home</a> <a href="/x">Menu item</a></nav>
<h1>Main
  Heading</h1>
<p>Some <b>bold</b>text and
   a <a href="#">link</a>, &lt;escaped&gt;.</p>
<ul><li>one</li><li>two<br>lines</li></ul>
<pre>
  code  keeps
    spaces
</pre>
<table><tr><td>cell1</td><td>cell2</td></tr></table>
<noscript>enable js</noscript>
<h2>Next</h2><div>last</div>
</body>
</html>`
	doc := parseHTML(src, "page.html")
	assert.Equal(t, "The & Page", doc.title)
	assert.Equal(t, []blockView{
		{10, 11, 1, "Main Heading"},
		{12, 13, 0, "Some boldtext and a link, <escaped>."},
		{14, 14, 0, "one"},
		{14, 14, 0, "two\nlines"},
		{16, 17, 0, "  code  keeps\n    spaces"},
		{19, 19, 0, "cell1 cell2"},
		{21, 21, 2, "Next"},
		{21, 21, 0, "last"},
	}, view(doc))
	all := strings.Join(blockTexts(doc), " ")
	for _, hidden := range []string{"secret", "color", "Menu item", "enable js"} {
		assert.NotContains(t, all, hidden)
	}
}

func blockTexts(doc document) []string {
	var out []string
	for _, b := range doc.blocks {
		out = append(out, b.text())
	}
	return out
}

func TestParseHTMLTitleFallbacks(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"first h1", "<h2>Sub</h2><h1>Top</h1><p>x</p>", "Top"},
		{"file name", "<p>just text</p>", "f.html"},
		{"empty title element", "<title>  </title><h1>H</h1>", "H"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, parseHTML(tt.src, "f.html").title)
		})
	}
}

func TestParseHTMLMalformed(t *testing.T) {
	// An unclosed skipped element must not hide text after </body>, and
	// broken markup must not panic or lose the text before it.
	doc := parseHTML("<p>before</p><nav>menu<p>inside nav</body><p>after</p><p>unclosed <b>bold", "m.html")
	texts := blockTexts(doc)
	assert.Contains(t, texts, "before")
	assert.Contains(t, texts, "after")
	assert.Contains(t, texts, "unclosed bold")
	assert.NotContains(t, strings.Join(texts, " "), "menu")
}

func TestKindOf(t *testing.T) {
	tests := map[string]fileKind{
		"a.md": kindMarkdown, "A.MARKDOWN": kindMarkdown, "b.txt": kindText, "c.rst": kindText,
		"d.html": kindHTML, "e.HTM": kindHTML, "f.pdf": kindPDF, "g.png": kindOther, "README": kindOther,
		"main.go": kindOther,
	}
	for name, want := range tests {
		assert.Equal(t, want, kindOf(name), name)
	}
}

func TestParseDispatch(t *testing.T) {
	require.Equal(t, "T", parse(kindMarkdown, "# T\n", "x.md").title)
	require.Equal(t, "x.txt", parse(kindText, "# T\n", "x.txt").title)
	require.Equal(t, "H", parse(kindHTML, "<title>H</title>", "x.html").title)
}
