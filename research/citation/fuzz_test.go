package citation

import (
	"encoding/binary"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
)

// fuzzMarker matches the markers FuzzInsertMarkers inserts: their labels
// start with a NUL byte, which the fuzzed text never holds.
var fuzzMarker = regexp.MustCompile(` \[\x00(\d+)\]\(https://vertexaisearch\.cloud\.google\.com/id/0-\d+\)`)

// fuzzCitations decodes citations from data, 7 bytes each: start and end
// as int16 (so negative and past-the-end offsets occur), the part index
// (-1 … 2, where 2 may name no part), and the number of segments (0 … 2).
func fuzzCitations(data []byte) []Citation {
	var cits []Citation
	for k := 0; len(data) >= 7 && k < 32; k, data = k+1, data[7:] {
		c := Citation{
			Start: int(int16(binary.LittleEndian.Uint16(data[0:]))),
			End:   int(int16(binary.LittleEndian.Uint16(data[2:]))),
			Part:  int(data[4]%4) - 1,
		}
		for s := range int(data[5] % 3) {
			c.Segments = append(c.Segments, Source{Label: "\x00" + strconv.Itoa(k), ShortURL: ShortURL(0, 2*k+s)})
		}
		cits = append(cits, c)
	}
	return cits
}

func FuzzInsertMarkers(f *testing.F) {
	f.Add("Spain won Euro 2024. The final was in Berlin.", "", []byte{0, 0, 20, 0, 1, 1, 0, 21, 0, 45, 0, 1, 2, 0})
	f.Add("欧洲杯2024冠军是西班牙。", "决赛在柏林举行。", []byte{0, 0, 1, 0, 1, 1, 0, 3, 0, 5, 0, 2, 1, 0, 0, 0, 99, 0, 1, 1, 0})
	f.Add("a😀b", "é", []byte{0, 0, 2, 0, 1, 2, 0, 0xff, 0xff, 0xfe, 0xff, 3, 1, 0})
	f.Add("", "", []byte{1, 0, 2, 0, 0, 1, 0})
	f.Fuzz(func(t *testing.T, a, b string, data []byte) {
		clean := func(s string) string { return strings.ReplaceAll(strings.ToValidUTF8(s, "?"), "\x00", "") }
		parts := []string{clean(a), clean(b)}
		text := parts[0] + parts[1]
		cits := fuzzCitations(data)

		got := InsertMarkers(parts, cits)
		want := len(text)
		for _, c := range cits {
			if c.Part >= 0 && c.Part < len(parts) {
				want += len(Marker(c.Segments))
			}
		}
		require.Len(t, got, want)

		// Removing the markers gives the text back, and each marker sits on
		// a rune boundary inside the part its citation names.
		assert.Equal(t, text, fuzzMarker.ReplaceAllString(got, ""))
		removed := 0
		for _, m := range fuzzMarker.FindAllStringSubmatchIndex(got, -1) {
			pos := m[0] - removed
			removed += m[1] - m[0]
			k, err := strconv.Atoi(got[m[2]:m[3]])
			require.NoError(t, err)
			c := cits[k]
			lo := 0
			if c.Part == 1 {
				lo = len(parts[0])
			}
			assert.GreaterOrEqual(t, pos, lo)
			assert.LessOrEqual(t, pos, lo+len(parts[c.Part]))
			assert.True(t, pos == len(text) || utf8.RuneStart(text[pos]), "marker inside a rune at %d", pos)
		}
		assert.True(t, utf8.ValidString(got))

		// Ground on the same data never panics and agrees with InsertMarkers
		// on which sources it gathered.
		g := &llm.Grounding{Chunks: []llm.GroundingChunk{{URI: "https://r.example/0", Title: parts[0]}, {URI: "https://r.example/1", Title: ""}}}
		for _, c := range cits {
			g.Supports = append(g.Supports, llm.GroundingSupport{StartIndex: c.Start, EndIndex: c.End, PartIndex: c.Part, ChunkIndices: []int{len(c.Segments) - 1, c.Start % 3}})
		}
		for _, opts := range []Options{{}, {ReferenceLabels: true}} {
			out, sources := Ground(&llm.Response{Content: text, Parts: parts, Grounding: g}, 0, opts)
			assert.True(t, utf8.ValidString(out))
			assert.GreaterOrEqual(t, len(out), len(text))
			for _, s := range sources {
				assert.Contains(t, out, Marker([]Source{s}))
			}
		}
	})
}

// fuzzGathered is what FuzzFinalize restores to; it has the prefix-collision
// pair 1-1 / 1-10 and one page under two short URLs.
var fuzzGathered = []Source{
	{Label: "a", ShortURL: ShortURL(1, 1), URL: "https://a.example/x"},
	{Label: "b", ShortURL: ShortURL(1, 10), URL: "https://b.example/y_(z)"},
	{Label: "c", ShortURL: ShortURL(0, 0), URL: "https://c.example/p q"},
	{Label: "a2", ShortURL: ShortURL(3, 0), URL: "https://a.example/x"},
}

// simpleLink finds plain [text](target) links, independently of the parser
// under test.
var simpleLink = regexp.MustCompile(`\[[^\[\]\n]*\]\(([^()\s]*)\)`)

func FuzzFinalize(f *testing.F) {
	for _, seed := range []string{
		"Fact [a](https://vertexaisearch.cloud.google.com/id/1-10). Other [x](https://vertexaisearch.cloud.google.com/id/1-0).",
		"See https://vertexaisearch.cloud.google.com/id/1-1, and <https://evil.example/>. ![p](https://evil.example/p.png)",
		"[a[x](https://evil.example/)](https://evil.example/2) [a](<https://a.example/x> \"t\")",
		"Fact [uefa][1].[^2]\n\n[1]: https://vertexaisearch.cloud.google.com/id/3-0\n[^2]: https://vertexaisearch.cloud.google.com/id/9-9\n",
		"([https://vertexaisearch.cloud.google.com/id/1-1; https://vertexaisearch.cloud.google.com/id/0-0]) vertexaisearch.cloud.goo[x](y)gle.com/id/1-1",
		"HTTPS://VERTEXAISEARCH.CLOUD.GOOGLE.COM/ID/1-1 [b](https://b.example/y_(z)) [c](https://c.example/p%20q)",
		"[a](https://vertexaisearch.cloud.google.com/id/1-1, https://vertexaisearch.cloud.google.com/id/1-10) 中文 [x](https://x.example/)。",
		// Issue 12: bare URLs, CJK boundaries, anchor text, code.
		"cite http://evil.example/ and www.evil.example/x",
		"东京是首都https://vertexaisearch.cloud.google.com/id/1-1。人口很多。",
		"„https://vertexaisearch.cloud.google.com/id/1-1“ （https://evil.example/）「www.evil.example」",
		"See [the Go spec](https://invented.example/) for details",
		"`[x](https://evil.example/)` [click](https://evil.example/`)` x\n```\n[a](https://evil.example/)\n```\n",
		"- item\n\n    [x](https://evil.example/)\n\n    code https://evil.example/",
		"[[[[(((" + "[a]((((" + "![a](" + "[x](y",
	} {
		f.Add(seed)
	}
	rendered := map[string]bool{}
	var alts []string
	for _, s := range fuzzGathered {
		rendered[renderURL(s.URL)] = true
		alts = append(alts, regexp.QuoteMeta(renderURL(s.URL)))
	}
	citationRe := regexp.MustCompile(`\[\d+\]\((?:` + strings.Join(alts, "|") + `)\)`)
	f.Fuzz(func(t *testing.T, answer string) {
		res := Finalize(answer, fuzzGathered)
		assert.GreaterOrEqual(t, res.Dropped, 0)
		prose := outsideCode(res.Text)
		assert.NotContains(t, asciiLower(prose), shortHostPath, "a short-URL token survived")
		for _, m := range simpleLink.FindAllStringSubmatch(prose, -1) {
			assert.True(t, rendered[m[1]], "link to %q, which was not gathered", m[1])
		}
		// Every URL outside code is a gathered source's citation.
		bare := citationRe.ReplaceAllString(prose, " ")
		var f urlFinder
		if start, end, ok := f.next(bare, 0); ok {
			t.Errorf("bare URL %q in the output", bare[start:end])
		}
		// Text is only ever removed where a citation was dropped or
		// rewritten: with nothing dropped and no link or URL in the
		// answer, it comes out as it went in.
		if res.Dropped == 0 && len(res.Sources) == 0 && !strings.ContainsAny(answer, "[]<>") && !strings.Contains(answer, "//") && indexFold(answer, "www.") < 0 {
			assert.Equal(t, answer, res.Text)
		}
		urls := map[string]bool{}
		for _, s := range res.Sources {
			assert.False(t, urls[s.URL], "source %q listed twice", s.URL)
			urls[s.URL] = true
			assert.True(t, rendered[renderURL(s.URL)])
		}
		// The output is a fixed point: nothing left to restore or drop.
		again := Finalize(res.Text, fuzzGathered)
		assert.Equal(t, res.Text, again.Text)
		assert.Equal(t, res.Sources, again.Sources)
		assert.Zero(t, again.Dropped)
	})
}

func FuzzFromLabels(f *testing.F) {
	for _, seed := range []string{"Fact [S1, S3]. Other (S2) [S9].", "[S1][S2-S3] 【S1】 [s2](https://x.example/)", "([S9]S1) [S1 and S2 & S3]"} {
		f.Add(seed)
	}
	sources := []Source{
		ForResult("A", "https://a.example/", 0, 0),
		ForResult("B", "https://www.b.example/", 0, 1),
		ForResult("C", "file:///c.md", 0, 2),
	}
	f.Fuzz(func(t *testing.T, summary string) {
		text, used := FromLabels(summary, sources)
		assert.LessOrEqual(t, len(used), len(sources))
		for _, s := range used {
			assert.Contains(t, text, Marker([]Source{s})[1:])
		}
		if utf8.ValidString(summary) {
			assert.True(t, utf8.ValidString(text))
		}
	})
}

// outsideCode is s without its code regions.
func outsideCode(s string) string {
	var b strings.Builder
	from := 0
	for _, c := range codeRegions(s) {
		b.WriteString(s[from:c.start])
		b.WriteByte(' ')
		from = c.end
	}
	b.WriteString(s[from:])
	return b.String()
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = lower(c)
	}
	return string(b)
}
