package gemini

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// Text with two-byte Latin letters and three-byte CJK characters, so byte
// and character offsets differ.
const (
	sentence1    = "Café Müller won the 2024 award."
	sentence2    = "北京是中国的首都。"
	groundedText = sentence1 + " " + sentence2
)

// groundedReply is a grounded answer whose first segment starts at 0 and so,
// as the API does, omits startIndex (and partIndex, which is 0 throughout).
// It also carries a non-web chunk, a support pointing at a part that does
// not exist, one without a segment and one citing only a missing chunk.
func groundedReply() string {
	s2 := strings.Index(groundedText, sentence2)
	return fmt.Sprintf(`{
	  "candidates": [{
	    "content": {"role": "model", "parts": [{"text": %q}]},
	    "finishReason": "STOP",
	    "groundingMetadata": {
	      "webSearchQueries": ["award 2024 winner", "capital of China"],
	      "searchEntryPoint": {"renderedContent": "<div class=\"chips\">award 2024 winner</div>"},
	      "groundingChunks": [
	        {"web": {"uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA", "title": "awards.example"}},
	        {"retrievedContext": {"uri": "gs://bucket/doc", "title": "internal"}},
	        {"web": {"uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/BBB", "title": "wikipedia.org"}}
	      ],
	      "groundingSupports": [
	        {"segment": {"endIndex": %d, "text": %q}, "groundingChunkIndices": [0], "confidenceScores": [0.97]},
	        {"segment": {"startIndex": %d, "endIndex": %d, "text": %q}, "groundingChunkIndices": [1, 2], "confidenceScores": [0.5, 0.9]},
	        {"segment": {"partIndex": 5, "startIndex": 0, "endIndex": 3}, "groundingChunkIndices": [0]},
	        {"groundingChunkIndices": [0]},
	        {"segment": {"startIndex": 0, "endIndex": 4}, "groundingChunkIndices": [99]}
	      ]
	    }
	  }],
	  "modelVersion": "gemini-2.5-flash-001"
	}`, groundedText, len(sentence1), sentence1, s2, s2+len(sentence2), sentence2)
}

func TestGenerateGrounding(t *testing.T) {
	f := newFake(t, reply(http.StatusOK, groundedReply()))
	resp, err := f.model(t, Config{}).Generate(context.Background(),
		[]schemas.Message{schemas.UserMessage("Who won, and what is China's capital?")}, llm.GoogleSearch())
	require.NoError(t, err)
	assertGrounded(t, resp)
	reqs := f.requests()
	require.Len(t, reqs, 1)
	assertJSON(t, `[{"googleSearch":{}}]`, reqs[0].wire(t).Tools, "tools")
}

// assertGrounded checks the reply of groundedReply (unary or streamed).
func assertGrounded(t *testing.T, resp *llm.Response) {
	t.Helper()
	require.Equal(t, groundedText, resp.Content)
	require.Equal(t, []string{groundedText}, resp.Parts)
	g := resp.Grounding
	require.NotNil(t, g)
	assert.Equal(t, []string{"award 2024 winner", "capital of China"}, g.WebSearchQueries)
	assert.Equal(t, `<div class="chips">award 2024 winner</div>`, g.SearchEntryPoint)
	assert.Equal(t, []llm.GroundingChunk{
		{URI: "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA", Title: "awards.example"},
		{URI: "https://vertexaisearch.cloud.google.com/grounding-api-redirect/BBB", Title: "wikipedia.org"},
	}, g.Chunks, "the non-web chunk is left out")
	require.Len(t, g.Supports, 2, "supports pointing nowhere are dropped")

	s := g.Supports[0]
	assert.Equal(t, 0, s.StartIndex, "an omitted startIndex means 0")
	assert.Equal(t, 0, s.PartIndex)
	assert.Equal(t, sentence1, resp.Parts[s.PartIndex][s.StartIndex:s.EndIndex], "offsets are byte offsets")
	assert.Equal(t, 33, s.EndIndex, "33 bytes, 31 characters")
	assert.Equal(t, []int{0}, s.ChunkIndices)
	assert.Equal(t, []float64{0.97}, s.Confidence, "the scores as sent, without a detour through float32")

	s = g.Supports[1]
	assert.Equal(t, sentence2, resp.Content[s.StartIndex:s.EndIndex])
	assert.Equal(t, 34, s.StartIndex)
	assert.Equal(t, 34+27, s.EndIndex, "nine CJK characters are 27 bytes")
	assert.Equal(t, []int{1}, s.ChunkIndices, "index 2 renumbered to 1, index 1 (not web) dropped")
	assert.Equal(t, []float64{0.9}, s.Confidence)
	assert.Equal(t, sentence2, s.Text)
}

func TestGenerateGroundingPartIndex(t *testing.T) {
	tests := []struct {
		name  string
		parts string
		// partIndex as the API sends it, and the Response.Parts index it is
		// expected to become.
		apiPart, wantPart int
		// segText sends the segment's text along; without it only the
		// offsets and partIndex locate the segment.
		segText       bool
		wantParts     []string
		wantReasoning string
	}{
		{
			name:      "second of two text parts",
			parts:     `[{"text":"First part. "},{"text":"Zweite Straße ist grün."}]`,
			apiPart:   1,
			wantPart:  1,
			wantParts: []string{"First part. ", "Zweite Straße ist grün."},
		},
		{
			name:          "index counts a thought part before the text",
			parts:         `[{"text":"Let me think…","thought":true},{"text":"First part. "},{"text":"Zweite Straße ist grün."}]`,
			apiPart:       2,
			wantPart:      1,
			wantParts:     []string{"First part. ", "Zweite Straße ist grün."},
			wantReasoning: "Let me think…",
		},
		{
			name:          "index naming a thought part, segment found by its text",
			parts:         `[{"text":"Let me think…","thought":true},{"text":"First part. "},{"text":"Zweite Straße ist grün."}]`,
			apiPart:       0,
			segText:       true,
			wantPart:      1,
			wantParts:     []string{"First part. ", "Zweite Straße ist grün."},
			wantReasoning: "Let me think…",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const cited = "Straße ist grün"
			start := strings.Index(tt.wantParts[tt.wantPart], cited)
			text := ""
			if tt.segText {
				text = fmt.Sprintf(`,"text":%q`, cited)
			}
			body := fmt.Sprintf(`{"candidates":[{"content":{"role":"model","parts":%s},"finishReason":"STOP",
			  "groundingMetadata":{"groundingChunks":[{"web":{"uri":"https://example.de/","title":"example.de"}}],
			  "groundingSupports":[{"segment":{"partIndex":%d,"startIndex":%d,"endIndex":%d%s},"groundingChunkIndices":[0]}]}}]}`,
				tt.parts, tt.apiPart, start, start+len(cited), text)
			f := newFake(t, reply(http.StatusOK, body))
			resp, err := f.model(t, Config{}).Generate(context.Background(), []schemas.Message{schemas.UserMessage("q")}, llm.GoogleSearch())
			require.NoError(t, err)
			assert.Equal(t, tt.wantParts, resp.Parts)
			assert.Equal(t, strings.Join(tt.wantParts, ""), resp.Content)
			assert.Equal(t, tt.wantReasoning, resp.Reasoning)
			require.NotNil(t, resp.Grounding)
			require.Len(t, resp.Grounding.Supports, 1)
			s := resp.Grounding.Supports[0]
			assert.Equal(t, tt.wantPart, s.PartIndex)
			assert.Equal(t, cited, resp.Parts[s.PartIndex][s.StartIndex:s.EndIndex])
			// Offsets into Content: add the lengths of the earlier parts.
			offset := 0
			for _, p := range resp.Parts[:s.PartIndex] {
				offset += len(p)
			}
			assert.Equal(t, cited, resp.Content[offset+s.StartIndex:offset+s.EndIndex])
		})
	}
}

func TestGenerateGroundingOddShapes(t *testing.T) {
	const text = `{"role":"model","parts":[{"text":"Spain won."}]}`
	tests := []struct {
		name     string
		metadata string // the groundingMetadata member, or ""
		want     *llm.Grounding
	}{
		{name: "no metadata", metadata: "", want: nil},
		{name: "empty metadata", metadata: `,"groundingMetadata":{}`, want: nil},
		{name: "queries only", metadata: `,"groundingMetadata":{"webSearchQueries":["euro 2024"]}`,
			want: &llm.Grounding{WebSearchQueries: []string{"euro 2024"}}},
		{name: "supports without chunks", metadata: `,"groundingMetadata":{"groundingSupports":[{"segment":{"endIndex":5},"groundingChunkIndices":[0]}]}`,
			want: nil},
		{name: "chunks without supports", metadata: `,"groundingMetadata":{"groundingChunks":[{"web":{"uri":"https://uefa.com/","title":"uefa.com"}},{"web":{}},null]}`,
			want: &llm.Grounding{Chunks: []llm.GroundingChunk{{URI: "https://uefa.com/", Title: "uefa.com"}}}},
		{name: "null supports and segment", metadata: `,"groundingMetadata":{"groundingChunks":[{"web":{"uri":"u"}}],"groundingSupports":[null,{"segment":null,"groundingChunkIndices":[0]}]}`,
			want: &llm.Grounding{Chunks: []llm.GroundingChunk{{URI: "u"}}}},
		{name: "end past the text is clamped", metadata: `,"groundingMetadata":{"groundingChunks":[{"web":{"uri":"u"}}],"groundingSupports":[{"segment":{"startIndex":6,"endIndex":500},"groundingChunkIndices":[0],"confidenceScores":[0.1,0.2]}]}`,
			want: &llm.Grounding{Chunks: []llm.GroundingChunk{{URI: "u"}}, Supports: []llm.GroundingSupport{{StartIndex: 6, EndIndex: 10, Text: "won.", ChunkIndices: []int{0}}}}},
		{name: "character offsets repaired from the segment text", metadata: `,"groundingMetadata":{"groundingChunks":[{"web":{"uri":"u"}}],"groundingSupports":[{"segment":{"startIndex":1,"endIndex":5,"text":"won."},"groundingChunkIndices":[0]}]}`,
			want: &llm.Grounding{Chunks: []llm.GroundingChunk{{URI: "u"}}, Supports: []llm.GroundingSupport{{StartIndex: 6, EndIndex: 10, Text: "won.", ChunkIndices: []int{0}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, reply(http.StatusOK, `{"candidates":[{"content":`+text+`,"finishReason":"STOP"`+tt.metadata+`}]}`))
			resp, err := f.model(t, Config{}).Generate(context.Background(), []schemas.Message{schemas.UserMessage("q")}, llm.GoogleSearch())
			require.NoError(t, err)
			assert.Equal(t, "Spain won.", resp.Content)
			assert.Equal(t, tt.want, resp.Grounding)
		})
	}
}
