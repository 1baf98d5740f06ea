package citation

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
)

// The vectors in testdata/citation-vectors.json are a copy of the shared
// reference vectors (shared/reference/citation-vectors.json), generated from
// the Python reference's citation helpers. Their JSON is snake_case and uses
// null for what the API omitted.

type vectorFile struct {
	Vectors         []vector         `json:"vectors"`
	FinalizeVectors []finalizeVector `json:"finalize_vectors"`
}

type vector struct {
	Name   string      `json:"name"`
	Input  vectorInput `json:"input"`
	Ref    *vectorOut  `json:"reference_output"`
	Byte   *vectorOut  `json:"byte_offset_correct_output"`
	NonASC bool        `json:"non_ascii"`
}

type vectorInput struct {
	QueryID int      `json:"query_id"`
	Text    string   `json:"text"`
	Parts   []string `json:"text_parts"`
	ByteLen int      `json:"text_utf8_byte_length"`
	Chunks  []struct {
		Web struct {
			URI   string  `json:"uri"`
			Title *string `json:"title"`
		} `json:"web"`
	} `json:"grounding_chunks"`
	Supports []struct {
		Segment *struct {
			Start *int   `json:"start_index"`
			End   *int   `json:"end_index"`
			Part  *int   `json:"part_index"`
			Text  string `json:"text"`
		} `json:"segment"`
		ChunkIndices []int `json:"grounding_chunk_indices"`
	} `json:"grounding_supports"`
}

type vectorSource struct {
	Label    string `json:"label"`
	ShortURL string `json:"short_url"`
	Value    string `json:"value"`
}

type vectorCitation struct {
	Start    int            `json:"start_index"`
	End      int            `json:"end_index"`
	Segments []vectorSource `json:"segments"`
}

type vectorOut struct {
	Resolved map[string]string `json:"resolved_urls"`
	Cits     []vectorCitation  `json:"citations"`
	Text     string            `json:"modified_text"`
	Sources  []vectorSource    `json:"sources_gathered"`
}

type finalizeVector struct {
	Name  string `json:"name"`
	Input struct {
		Answer   string         `json:"answer_text"`
		Gathered []vectorSource `json:"sources_gathered"`
	} `json:"input"`
	Ref struct {
		Content string         `json:"content"`
		Unique  []vectorSource `json:"unique_sources"`
	} `json:"reference_output"`
}

func loadVectors(t *testing.T) vectorFile {
	t.Helper()
	data, err := os.ReadFile("testdata/citation-vectors.json")
	require.NoError(t, err)
	var f vectorFile
	require.NoError(t, json.Unmarshal(data, &f))
	require.NotEmpty(t, f.Vectors)
	require.NotEmpty(t, f.FinalizeVectors)
	return f
}

// response converts a vector's input into what llm/gemini hands us: the
// API omits zero-valued fields, so a null start or part index is 0; a null
// end index, and a null segment, both arrive as EndIndex 0 — which
// Citations skips, as the reference skips them.
func (in vectorInput) response() *llm.Response {
	g := &llm.Grounding{}
	for _, c := range in.Chunks {
		ch := llm.GroundingChunk{URI: c.Web.URI}
		if c.Web.Title != nil {
			ch.Title = *c.Web.Title
		}
		g.Chunks = append(g.Chunks, ch)
	}
	for _, s := range in.Supports {
		sup := llm.GroundingSupport{ChunkIndices: s.ChunkIndices}
		if seg := s.Segment; seg != nil {
			sup.Text = seg.Text
			if seg.Start != nil {
				sup.StartIndex = *seg.Start
			}
			if seg.End != nil {
				sup.EndIndex = *seg.End
			}
			if seg.Part != nil {
				sup.PartIndex = *seg.Part
			}
		}
		g.Supports = append(g.Supports, sup)
	}
	resp := &llm.Response{Content: in.Text, Parts: in.Parts, Grounding: g}
	return resp
}

func project(srcs []Source) []vectorSource {
	out := make([]vectorSource, len(srcs))
	for i, s := range srcs {
		out[i] = vectorSource{Label: s.Label, ShortURL: s.ShortURL, Value: s.URL}
	}
	return out
}

func projectCitations(cits []Citation) []vectorCitation {
	out := make([]vectorCitation, len(cits))
	for i, c := range cits {
		out[i] = vectorCitation{Start: c.Start, End: c.End, Segments: project(c.Segments)}
	}
	return out
}

// expected is the output our implementation must reproduce: the byte-offset
// one where the reference gets it wrong, else the reference's.
func (v vector) expected() *vectorOut {
	if v.Byte != nil {
		return v.Byte
	}
	return v.Ref
}

// TestVectors checks every grounding vector: resolved URLs, citations,
// text with markers and gathered sources. The one vector about titles
// without a '.' runs with ReferenceLabels (parity); its default-mode output
// is checked in TestVectorLabelEdgeCasesDefault.
func TestVectors(t *testing.T) {
	f := loadVectors(t)
	require.Len(t, f.Vectors, 14, "the shared vector file changed: review the tests")
	for _, v := range f.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			want := v.expected()
			require.NotNil(t, want)
			if v.NonASC {
				require.NotNil(t, v.Byte, "non-ASCII vectors carry a byte-offset output")
			}
			opts := Options{ReferenceLabels: v.Name == "ascii_label_and_error_edge_cases"}
			resp := v.Input.response()
			require.Len(t, resp.Content, v.Input.ByteLen)

			resolved := ResolveURLs(resp.Grounding.Chunks, v.Input.QueryID)
			assert.Equal(t, want.Resolved, resolved)

			cits := Citations(resp.Grounding, resolved, opts)
			assert.Equal(t, want.Cits, projectCitations(cits))

			text, sources := Ground(resp, v.Input.QueryID, opts)
			assert.Equal(t, want.Text, text)
			assert.Equal(t, want.Sources, project(sources))

			parts := v.Input.Parts
			if parts == nil {
				parts = []string{v.Input.Text}
			}
			assert.Equal(t, want.Text, InsertMarkers(parts, cits))
		})
	}
}

// TestVectorsDefaultLabelsAgree checks that, apart from the title edge
// cases, the default label rule gives the same output as the parity one.
func TestVectorsDefaultLabelsAgree(t *testing.T) {
	f := loadVectors(t)
	for _, v := range f.Vectors {
		if v.Name == "ascii_label_and_error_edge_cases" {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			resp := v.Input.response()
			defText, defSources := Ground(resp, v.Input.QueryID, Options{})
			refText, refSources := Ground(resp, v.Input.QueryID, Options{ReferenceLabels: true})
			assert.Equal(t, refText, defText)
			assert.Equal(t, refSources, defSources)
		})
	}
}

// TestVectorsReferenceDiffers shows that the non-ASCII and multi-part
// vectors are exactly the ones where the reference's code-point slicing and
// ignored part index go wrong, and that we do not reproduce it.
func TestVectorsReferenceDiffers(t *testing.T) {
	f := loadVectors(t)
	for _, v := range f.Vectors {
		if v.Byte == nil {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			text, _ := Ground(v.Input.response(), v.Input.QueryID, Options{})
			assert.NotEqual(t, v.Ref.Text, text)
		})
	}
}

// TestVectorLabelEdgeCasesDefault is the label edge-case vector with the
// default (fixed) label rule: the title without a '.' keeps its whole title,
// the null title falls back to the URI's host; out-of-range indices, missing
// ends and missing segments are still skipped.
func TestVectorLabelEdgeCasesDefault(t *testing.T) {
	f := loadVectors(t)
	var v *vector
	for i := range f.Vectors {
		if f.Vectors[i].Name == "ascii_label_and_error_edge_cases" {
			v = &f.Vectors[i]
		}
	}
	require.NotNil(t, v)
	const (
		redirect = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/"
		host     = "vertexaisearch.cloud.google.com"
	)
	src := func(label string, i int, title string) Source {
		return Source{Label: label, ShortURL: ShortURL(2, i), URL: redirect + "T" + string(rune('0'+i)), Title: title}
	}
	example := src("example", 0, "example.com")
	en := src("en", 1, "en.wikipedia.org")
	localhost := src("localhost", 2, "localhost")
	untitled := src(host, 3, "")
	some := src("Some Page Title", 4, "Some Page Title. Subtitle")

	resp := v.Input.response()
	cits := Citations(resp.Grounding, ResolveURLs(resp.Grounding.Chunks, 2), Options{})
	assert.Equal(t, []Citation{
		{Start: 0, End: 15, Segments: []Source{example, en, localhost}},
		{Start: 16, End: 31, Segments: []Source{untitled}},
		{Start: 0, End: 47, Segments: []Source{some}},
		{Start: 48, End: 64, Segments: []Source{}},
	}, cits)

	text, sources := Ground(resp, 2, Options{})
	assert.Equal(t, "Alpha is first."+
		" [example](https://vertexaisearch.cloud.google.com/id/2-0)"+
		" [en](https://vertexaisearch.cloud.google.com/id/2-1)"+
		" [localhost](https://vertexaisearch.cloud.google.com/id/2-2)"+
		" Beta is second."+
		" [vertexaisearch.cloud.google.com](https://vertexaisearch.cloud.google.com/id/2-3)"+
		" Gamma is third."+
		" [Some Page Title](https://vertexaisearch.cloud.google.com/id/2-4)"+
		" Delta is fourth.", text)
	assert.Equal(t, []Source{example, en, localhost, untitled, some}, sources)
}

// TestFinalizeVectors runs the reference's finalize vectors. Where the
// reference is right (replacing cited short URLs, keeping each source once)
// we agree on which sources are kept; the text differs by design (numbered
// links), and so do the two vectors that show its bugs.
func TestFinalizeVectors(t *testing.T) {
	f := loadVectors(t)
	require.Len(t, f.FinalizeVectors, 3)
	const redirect = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/"
	want := map[string]Result{
		"finalize_basic_dedupe": {
			Text: "Spain won [1](" + redirect + "AAA). Again [1](" + redirect + "AAA). Final in Berlin [2](" + redirect + "CCC).",
			Sources: []Source{
				{Label: "uefa", ShortURL: ShortURL(0, 0), URL: redirect + "AAA"},
				{Label: "espn", ShortURL: ShortURL(1, 0), URL: redirect + "CCC"},
			},
		},
		// The invented short URL is removed, not left as a dead link.
		"finalize_hallucinated_short_url": {
			Text:    "Claim. Other [1](" + redirect + "AAA).",
			Sources: []Source{{Label: "uefa", ShortURL: ShortURL(0, 0), URL: redirect + "AAA"}},
			Dropped: 1,
		},
		// One page under two short URLs is one source.
		"finalize_same_page_two_short_urls": {
			Text:    "A [1](" + redirect + "SAME). B [1](" + redirect + "SAME).",
			Sources: []Source{{Label: "uefa", ShortURL: ShortURL(0, 0), URL: redirect + "SAME"}},
		},
	}
	for _, v := range f.FinalizeVectors {
		t.Run(v.Name, func(t *testing.T) {
			exp, ok := want[v.Name]
			require.True(t, ok, "no expectation for %s", v.Name)
			var gathered []Source
			for _, s := range v.Input.Gathered {
				gathered = append(gathered, Source{Label: s.Label, ShortURL: s.ShortURL, URL: s.Value})
			}
			got := Finalize(v.Input.Answer, gathered)
			assert.Equal(t, exp, got)
			if v.Name == "finalize_basic_dedupe" {
				// Same sources kept as the reference.
				assert.Equal(t, v.Ref.Unique, project(got.Sources))
			}
		})
	}
}
