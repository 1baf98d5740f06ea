package citation

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
)

func seg(label string, q, i int) Source {
	return Source{Label: label, ShortURL: ShortURL(q, i), URL: "https://r.example/" + label}
}

func TestInsertMarkers(t *testing.T) {
	x := seg("x", 0, 0)
	y := seg("y", 0, 1)
	mx, my := Marker([]Source{x}), Marker([]Source{y})
	tests := []struct {
		name  string
		parts []string
		cits  []Citation
		want  string
	}{
		{"no citations", []string{"abc"}, nil, "abc"},
		{"no parts", nil, []Citation{{End: 1, Segments: []Source{x}}}, ""},
		{"end of text", []string{"abc"}, []Citation{{End: 3, Segments: []Source{x}}}, "abc" + mx},
		{"end past the text clamps", []string{"abc"}, []Citation{{End: 99, Segments: []Source{x}}}, "abc" + mx},
		{"negative end clamps to 0", []string{"abc"}, []Citation{{End: -5, Segments: []Source{x}}}, mx + "abc"},
		{"empty segments add nothing", []string{"abc"}, []Citation{{End: 2, Segments: []Source{}}}, "abc"},
		{"part out of range adds nothing", []string{"abc"}, []Citation{{End: 2, Part: 1, Segments: []Source{x}}, {End: 2, Part: -1, Segments: []Source{x}}}, "abc"},
		// "é" is 2 bytes: offset 2 is inside it and moves to 3.
		{"inside a 2-byte rune moves forward", []string{"héllo"}, []Citation{{End: 2, Segments: []Source{x}}}, "hé" + mx + "llo"},
		// "中" is 3 bytes at 0..3.
		{"inside a 3-byte rune moves forward", []string{"中文"}, []Citation{{End: 1, Segments: []Source{x}}, {End: 5, Segments: []Source{y}}}, "中" + mx + "文" + my},
		// "😀" is 4 bytes.
		{"inside a 4-byte rune moves forward", []string{"a😀b"}, []Citation{{End: 2, Segments: []Source{x}}}, "a😀" + mx + "b"},
		{"offsets relative to their part", []string{"ab. ", "cd."}, []Citation{{End: 3, Part: 1, Segments: []Source{y}}, {End: 3, Segments: []Source{x}}}, "ab." + mx + " cd." + my},
		{"end past its part clamps to the part", []string{"ab", "cd"}, []Citation{{End: 50, Part: 0, Segments: []Source{x}}}, "ab" + mx + "cd"},
		{"same position: ascending start", []string{"abcdef"}, []Citation{{Start: 3, End: 6, Segments: []Source{y}}, {Start: 0, End: 6, Segments: []Source{x}}}, "abcdef" + mx + my},
		{"same span: reverse API order", []string{"abcdef"}, []Citation{{Start: 0, End: 6, Segments: []Source{x}}, {Start: 0, End: 6, Segments: []Source{y}}}, "abcdef" + my + mx},
		{"several segments concatenate", []string{"ab"}, []Citation{{End: 2, Segments: []Source{x, y}}}, "ab" + mx + my},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, InsertMarkers(tt.parts, tt.cits))
		})
	}
}

func TestMarker(t *testing.T) {
	assert.Equal(t, " [uefa](https://vertexaisearch.cloud.google.com/id/0-0) [bbc](https://vertexaisearch.cloud.google.com/id/0-1)",
		Marker([]Source{seg("uefa", 0, 0), seg("bbc", 0, 1)}))
	assert.Empty(t, Marker(nil))
}

func TestShortURLAndResolve(t *testing.T) {
	assert.Equal(t, "https://vertexaisearch.cloud.google.com/id/12-3", ShortURL(12, 3))
	resolved := ResolveURLs([]llm.GroundingChunk{
		{URI: "u0"}, {URI: "u1"}, {URI: "u0"}, {URI: ""}, {URI: "u4"}, {URI: "u1"},
	}, 7)
	assert.Equal(t, map[string]string{"u0": ShortURL(7, 0), "u1": ShortURL(7, 1), "u4": ShortURL(7, 4)}, resolved)
	assert.Empty(t, ResolveURLs(nil, 0))
}

func TestCitations(t *testing.T) {
	g := &llm.Grounding{
		Chunks: []llm.GroundingChunk{{URI: "https://r.example/0", Title: "a.com"}, {URI: "https://r.example/1", Title: "b.org"}},
		Supports: []llm.GroundingSupport{
			{StartIndex: 0, EndIndex: 0, ChunkIndices: []int{0}},           // missing end / segment: skipped
			{StartIndex: 2, EndIndex: -1, ChunkIndices: []int{0}},          // invalid end: skipped
			{StartIndex: 0, EndIndex: 4, ChunkIndices: []int{1, -1, 2, 0}}, // bad indices dropped
			{StartIndex: 5, EndIndex: 9, PartIndex: 1, ChunkIndices: nil},  // kept, empty
		},
	}
	resolved := ResolveURLs(g.Chunks, 0)
	cits := Citations(g, resolved, Options{})
	require.Len(t, cits, 2)
	assert.Equal(t, Citation{Start: 0, End: 4, Segments: []Source{
		{Label: "b", ShortURL: ShortURL(0, 1), URL: "https://r.example/1", Title: "b.org"},
		{Label: "a", ShortURL: ShortURL(0, 0), URL: "https://r.example/0", Title: "a.com"},
	}}, cits[0])
	assert.Equal(t, Citation{Start: 5, End: 9, Part: 1, Segments: []Source{}}, cits[1])

	// A URI missing from the resolved map cannot become a marker.
	cits = Citations(g, map[string]string{"https://r.example/1": ShortURL(0, 1)}, Options{})
	require.Len(t, cits, 2)
	require.Len(t, cits[0].Segments, 1)
	assert.Equal(t, "b", cits[0].Segments[0].Label)

	assert.Nil(t, Citations(nil, resolved, Options{}))
}

func TestGroundNeverPanics(t *testing.T) {
	chunks := []llm.GroundingChunk{{URI: "https://r.example/0", Title: "a.com"}}
	supports := []llm.GroundingSupport{{EndIndex: 5, ChunkIndices: []int{0}}}
	tests := []struct {
		name        string
		resp        *llm.Response
		wantText    string
		wantSources int
	}{
		{"nil response", nil, "", 0},
		{"no grounding", &llm.Response{Content: "Hello world"}, "Hello world", 0},
		{"empty grounding", &llm.Response{Content: "Hello world", Grounding: &llm.Grounding{}}, "Hello world", 0},
		{"no chunks", &llm.Response{Content: "Hello world", Grounding: &llm.Grounding{Supports: supports}}, "Hello world", 0},
		{"no supports", &llm.Response{Content: "Hello world", Grounding: &llm.Grounding{Chunks: chunks}}, "Hello world", 0},
		{"out-of-range chunk index", &llm.Response{Content: "Hello world", Grounding: &llm.Grounding{Chunks: chunks,
			Supports: []llm.GroundingSupport{{EndIndex: 5, ChunkIndices: []int{3}}}}}, "Hello world", 0},
		{"part index past the parts", &llm.Response{Content: "Hello world", Grounding: &llm.Grounding{Chunks: chunks,
			Supports: []llm.GroundingSupport{{EndIndex: 5, PartIndex: 2, ChunkIndices: []int{0}}}}}, "Hello world", 0},
		{"no text at all", &llm.Response{Grounding: &llm.Grounding{Chunks: chunks, Supports: supports}},
			" [a](" + ShortURL(0, 0) + ")", 1},
		{"grounded", &llm.Response{Content: "Hello world", Grounding: &llm.Grounding{Chunks: chunks, Supports: supports}},
			"Hello [a](" + ShortURL(0, 0) + ") world", 1},
		{"parts win over content", &llm.Response{Content: "ignored", Parts: []string{"Hel", "lo world"}, Grounding: &llm.Grounding{Chunks: chunks,
			Supports: []llm.GroundingSupport{{EndIndex: 2, PartIndex: 1, ChunkIndices: []int{0}}}}}, "Hello [a](" + ShortURL(0, 0) + ") world", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, sources := Ground(tt.resp, 0, Options{})
			assert.Equal(t, tt.wantText, text)
			assert.Len(t, sources, tt.wantSources)
		})
	}
}

func TestLabels(t *testing.T) {
	tests := []struct {
		title, uri string
		want       string
		refWant    string
		refOK      bool
	}{
		{"uefa.com", "", "uefa", "uefa", true},
		{"en.wikipedia.org", "", "en", "en", true},
		{"bbc.co.uk", "", "bbc", "bbc", true},
		{"Some Title. More", "", "Some Title", "Some Title", true},
		{"localhost", "", "localhost", "", false},
		{"", "https://www.Example.com/x", "example.com", "", false},
		{"", "not a url at all", "source", "", false},
		{".com", "", ".com", "", true},
		{"  [Evil]\n](https://x) \\ title  ", "", "(Evil) )(https://x) / title", "  [Evil]\n](https://x) \\ title  ", false},
		{strings.Repeat("é", 100), "", strings.Repeat("é", maxLabelRunes) + "…", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.title, func(t *testing.T) {
			c := llm.GroundingChunk{URI: tt.uri, Title: tt.title}
			got, ok := chunkLabel(c, Options{})
			assert.True(t, ok)
			assert.Equal(t, tt.want, got)
			ref, ok := chunkLabel(c, Options{ReferenceLabels: true})
			assert.Equal(t, tt.refOK, ok)
			if ok {
				assert.Equal(t, tt.refWant, ref)
			}
		})
	}
}

// TestInsertMarkersSeveralEndsPastText: ends past the text clamp before
// ordering, so markers stack at the end in start order, never inside each
// other.
func TestInsertMarkersSeveralEndsPastText(t *testing.T) {
	x, y := seg("x", 0, 0), seg("y", 0, 1)
	got := InsertMarkers([]string{"Short."}, []Citation{
		{Start: 3, End: 500, Segments: []Source{y}},
		{Start: 0, End: 30, Segments: []Source{x}},
	})
	assert.Equal(t, "Short."+Marker([]Source{x})+Marker([]Source{y}), got)
}
