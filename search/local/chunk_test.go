package local

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type passageView struct {
	Start, End int
	Title      string
}

func views(ps []passage) []passageView {
	var out []passageView
	for _, p := range ps {
		out = append(out, passageView{p.start, p.end, p.title})
	}
	return out
}

func TestChunkSections(t *testing.T) {
	src := "# Guide\n## Install\nRun it.\n\n### Linux\napt install\n\n## Use\nCall it.\n"
	ps := chunk(parseMarkdown(src, "g.md"), 1000)
	assert.Equal(t, []passageView{
		{1, 3, "Guide › Install"}, // headings with no text between stay with the text
		{5, 6, "Guide › Install › Linux"},
		{8, 9, "Guide › Use"},
	}, views(ps))
	assert.Equal(t, "# Guide\n\n## Install\n\nRun it.", ps[0].body)
}

func TestChunkHeadingOnlyAndNoHeading(t *testing.T) {
	assert.Equal(t, []passageView{{1, 2, "T › Only headings"}},
		views(chunk(parseMarkdown("# T\n## Only headings\n", "x.md"), 500)))
	assert.Equal(t, []passageView{{1, 3, "x.txt"}},
		views(chunk(parsePlain("a\n\nb\n", "x.txt"), 500)))
	assert.Empty(t, chunk(parsePlain("\n\n \n", "x.txt"), 500))
}

func TestChunkSizeAndOverlap(t *testing.T) {
	// Twenty 59-byte paragraphs on lines 1, 3, 5, …; target 300 bytes, so
	// a paragraph is small enough (<= 300/4) to be repeated as overlap.
	var sb strings.Builder
	for i := range 20 {
		fmt.Fprintf(&sb, "para %02d %s\n\n", i, strings.Repeat("x", 51))
	}
	ps := chunk(parsePlain(sb.String(), "p.txt"), 300)
	require.Greater(t, len(ps), 4)
	for i, p := range ps {
		assert.LessOrEqual(t, len(p.body), 300+300/4+2, "passage %d too big", i)
		assert.LessOrEqual(t, p.start, p.end)
		if i > 0 {
			// The last paragraph of the previous passage opens this one.
			assert.Equal(t, ps[i-1].end, p.start, "passage %d should overlap its predecessor by one block", i)
			assert.True(t, strings.HasPrefix(p.body, lastLine(ps[i-1].body)), "passage %d body", i)
		}
	}
	assert.Equal(t, 1, ps[0].start)
	assert.Equal(t, 39, ps[len(ps)-1].end)
}

func lastLine(s string) string { return s[strings.LastIndex(s, "\n")+1:] }

func TestChunkLargeBlockSplitByLines(t *testing.T) {
	// One 30-line paragraph of 40 bytes a line, target 300: pieces break at
	// line boundaries and report their own lines.
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf("line %02d %s", i+1, strings.Repeat("y", 31)))
	}
	ps := chunk(parsePlain(strings.Join(lines, "\n"), "big.txt"), 300)
	require.Greater(t, len(ps), 3)
	next := 1
	for _, p := range ps {
		assert.LessOrEqual(t, p.start, next, "no gap before passage at %d", p.start)
		assert.Contains(t, p.body, fmt.Sprintf("line %02d ", p.start))
		assert.Contains(t, p.body, fmt.Sprintf("line %02d ", p.end))
		assert.NotContains(t, p.body, fmt.Sprintf("line %02d ", p.end+1))
		next = p.end + 1
	}
	assert.Equal(t, 31, next)
}

func TestChunkLongLine(t *testing.T) {
	words := strings.Repeat("word ", 1000) // 5000 bytes on line 2
	ps := chunk(parsePlain("first\n\n"+words+"\n\nlast", "l.txt"), 400)
	require.Greater(t, len(ps), 10)
	for _, p := range ps[1 : len(ps)-2] {
		assert.Equal(t, 3, p.start)
		assert.Equal(t, 3, p.end)
		assert.LessOrEqual(t, len(p.body), 400)
	}
	assert.Equal(t, passageView{1, 3, "l.txt"}, views(ps)[0], "the short first paragraph joins the first piece")
	assert.Equal(t, 5, ps[len(ps)-1].end)
}

func TestSplitText(t *testing.T) {
	tests := []struct {
		name string
		s    string
		max  int
	}{
		{"short", "abc", 10},
		{"words", strings.Repeat("alpha beta ", 50), 64},
		{"no spaces", strings.Repeat("x", 1000), 100},
		{"multibyte", strings.Repeat("日本語", 200), 100},
		{"max below rune", "日本", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := splitText(tt.s, tt.max)
			assert.Equal(t, tt.s, strings.Join(parts, ""))
			for _, p := range parts {
				assert.True(t, utf8.ValidString(p), "%q", p)
				assert.NotEmpty(t, p)
				if utf8.RuneCountInString(p) > 1 {
					assert.LessOrEqual(t, len(p), tt.max)
				}
			}
		})
	}
}

func TestSectionTitle(t *testing.T) {
	assert.Equal(t, "Doc", sectionTitle("Doc", [6]string{}))
	assert.Equal(t, "Doc › A › C", sectionTitle("Doc", [6]string{"Doc", "A", "", "C"}))
	assert.Equal(t, "f.md › Intro", sectionTitle("f.md", [6]string{"", "Intro"}))
	long := sectionTitle(strings.Repeat("t", 500), [6]string{})
	assert.LessOrEqual(t, len(long), maxTitleBytes+len("…"))
}

// FuzzParseAndChunk feeds arbitrary text to every parser and the chunker:
// no panic, and every passage cites lines that exist, in order, with a
// non-empty body of valid UTF-8 no larger than 1.25 × the target.
func FuzzParseAndChunk(f *testing.F) {
	for _, s := range []string{
		"# T\n\npara\n\n## S\ntext\n", "---\ntitle: x\n---\nbody", "```\n# c\n", "a\n===\n\nb\n---\n",
		"<html><title>t</title><h1>H</h1><p>x &amp; y</p><pre>\n a\n</pre>", "<nav><p>x</body><p>y",
		"<p>" + strings.Repeat("word ", 300) + "</p>", strings.Repeat("long line ", 200), "\r\n\r\n x \r\n",
	} {
		f.Add(s)
	}
	const target = 200
	f.Fuzz(func(t *testing.T, src string) {
		if !utf8.ValidString(src) {
			return // the indexer skips files that are not UTF-8
		}
		lines := len(splitLines(src))
		if strings.Count(src, "\n")+1 > lines {
			lines = strings.Count(src, "\n") + 1
		}
		for _, kind := range []fileKind{kindMarkdown, kindText, kindHTML} {
			doc := parse(kind, src, "f")
			assert.NotEmpty(t, doc.title)
			for _, p := range chunk(doc, target) {
				assert.True(t, p.start >= 1 && p.start <= p.end && p.end <= lines,
					"kind %d: lines %d-%d of %d", kind, p.start, p.end, lines)
				assert.NotEmpty(t, p.body)
				assert.True(t, utf8.ValidString(p.body))
				assert.LessOrEqual(t, len(p.body), target+target/4+8, "kind %d", kind)
			}
		}
	})
}
