package gemini

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
)

func TestLocateSegment(t *testing.T) {
	const text = "Café Müller 北京 Café"
	tests := []struct {
		name            string
		start, end      int
		segText         string
		wantStart, want int
		wantOK          bool
		wantSubstring   string
	}{
		{name: "byte offsets", start: 0, end: 5, wantStart: 0, want: 5, wantOK: true, wantSubstring: "Café"},
		{name: "end clamped", start: 14, end: 999, wantStart: 14, want: len(text), wantOK: true, wantSubstring: "北京 Café"},
		{name: "negative start clamped", start: -4, end: 5, wantStart: 0, want: 5, wantOK: true, wantSubstring: "Café"},
		{name: "mid-rune offsets move forward", start: 4, end: 15, wantStart: 5, want: 17, wantOK: true, wantSubstring: " Müller 北"},
		{name: "empty span", start: 7, end: 7},
		{name: "reversed span", start: 9, end: 2},
		{name: "past the end", start: 500, end: 600},
		{name: "matching segment text kept", start: 0, end: 5, segText: "Café", wantStart: 0, want: 5, wantOK: true, wantSubstring: "Café"},
		{name: "character offsets repaired", start: 12, end: 14, segText: "北京", wantStart: 14, want: 20, wantOK: true, wantSubstring: "北京"},
		{name: "nearest occurrence chosen", start: 19, end: 23, segText: "Café", wantStart: 21, want: 26, wantOK: true, wantSubstring: "Café"},
		{name: "unknown segment text keeps offsets", start: 0, end: 5, segText: "Tea", wantStart: 0, want: 5, wantOK: true, wantSubstring: "Café"},
		{name: "unknown segment text, bad offsets", start: 9, end: 2, segText: "Tea"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, end, ok := locateSegment(text, tt.start, tt.end, tt.segText)
			require.Equal(t, tt.wantOK, ok)
			if !ok {
				return
			}
			assert.Equal(t, tt.wantStart, start)
			assert.Equal(t, tt.want, end)
			assert.Equal(t, tt.wantSubstring, text[start:end])
		})
	}
}

func TestNearestIndex(t *testing.T) {
	tests := []struct {
		s, sub string
		near   int
		want   int
	}{
		{"abcabcabc", "abc", 0, 0},
		{"abcabcabc", "abc", 4, 3},
		{"abcabcabc", "abc", 100, 6},
		{"abcabcabc", "abc", 5, 6},
		{"abc", "x", 0, -1},
		{"ab", "abc", 0, -1},
		{"aaaa", "aa", 1, 1},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, nearestIndex(tt.s, tt.sub, tt.near), "nearestIndex(%q, %q, %d)", tt.s, tt.sub, tt.near)
	}
}

func TestFinishReason(t *testing.T) {
	tests := []struct {
		in    string
		calls bool
		want  llm.FinishReason
	}{
		{finishStop, false, llm.FinishStop},
		{finishStop, true, llm.FinishToolCalls},
		{"", false, llm.FinishStop},
		{"", true, llm.FinishToolCalls},
		{finishMaxTokens, true, llm.FinishLength},
		{finishSafety, false, llm.FinishContentFilter},
		{finishBlocklist, false, llm.FinishContentFilter},
		{finishProhibitedContent, false, llm.FinishContentFilter},
		{finishSPII, false, llm.FinishContentFilter},
		{finishRecitation, false, llm.FinishContentFilter},
		{"MALFORMED_FUNCTION_CALL", false, llm.FinishOther},
		{"LANGUAGE", false, llm.FinishOther},
		{"SOMETHING_NEW", false, llm.FinishOther},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, finishReason(tt.in, tt.calls), "%s (calls %v)", tt.in, tt.calls)
	}
}

func TestConvertUsage(t *testing.T) {
	assert.Equal(t, llm.Usage{}, convertUsage(nil))
	assert.Equal(t,
		llm.Usage{PromptTokens: 10, CompletionTokens: 4, ReasoningTokens: 6, TotalTokens: 20},
		convertUsage(&wireUsage{PromptTokenCount: 10, CandidatesTokenCount: 4, ThoughtsTokenCount: 6}),
		"a missing total is the sum")
}

func TestAssemblerMergesLikeTheAPI(t *testing.T) {
	chunk := func(parts ...*wirePart) *wireResponse {
		return &wireResponse{Candidates: []*wireCandidate{{Content: &wireContent{Parts: parts}}}}
	}
	var a assembler
	a.add(chunk(&wirePart{Text: "Hmm", Thought: true}), nil)
	a.add(chunk(&wirePart{Text: "…", Thought: true}), nil)
	a.add(chunk(&wirePart{Text: "Hello "}), nil)
	a.add(chunk(&wirePart{Text: "world", ThoughtSignature: []byte("s")}, nil), nil)
	a.add(chunk(&wirePart{FunctionCall: &wireFunctionCall{Name: "f"}}), nil)
	a.add(chunk(&wirePart{Text: "after"}), nil)
	a.add(nil, nil)
	assert.Error(t, a.complete(), "no finish reason yet")
	a.add(&wireResponse{Candidates: []*wireCandidate{{FinishReason: finishStop}}}, nil)
	require.NoError(t, a.complete())

	parts := a.response().Candidates[0].Content.Parts
	require.Len(t, parts, 4)
	assert.Equal(t, wirePart{Text: "Hmm…", Thought: true}, *parts[0])
	assert.Equal(t, wirePart{Text: "Hello world", ThoughtSignature: []byte("s")}, *parts[1])
	assert.Equal(t, "f", parts[2].FunctionCall.Name)
	assert.Equal(t, "after", parts[3].Text)
}

// FuzzConvertResponse feeds arbitrary response bodies through the decoding
// and mapping of replies: it must never panic, and every grounding support it
// keeps must index valid text and chunks.
func FuzzConvertResponse(f *testing.F) {
	f.Add(groundedReply())
	f.Add(toolCallReply)
	f.Add(`{"candidates":[{"content":{"parts":[{"text":"a","thought":true},{"text":"Zweite Straße"}]},"groundingMetadata":{"groundingChunks":[{"web":{"uri":"u"}}],"groundingSupports":[{"segment":{"partIndex":1,"startIndex":3,"endIndex":9},"groundingChunkIndices":[0,0,-1,7]}]}}]}`)
	f.Add(`{"candidates":[null]}`)
	f.Add(`{"candidates":[{"groundingMetadata":{"groundingSupports":[{"segment":{"partIndex":-3,"startIndex":-1,"endIndex":2147483647,"text":"x"}}]}}]}`)
	f.Add(`{"promptFeedback":{"blockReason":"SAFETY"}}`)
	f.Fuzz(func(t *testing.T, body string) {
		var resp wireResponse
		if json.Unmarshal([]byte(body), &resp) != nil {
			return
		}
		out, err := convertResponse(&resp)
		if err != nil {
			return
		}
		var joined string
		for _, p := range out.Parts {
			joined += p
		}
		if joined != out.Content {
			t.Fatalf("Content %q is not the concatenation of Parts %q", out.Content, out.Parts)
		}
		if out.Grounding == nil {
			return
		}
		for _, s := range out.Grounding.Supports {
			if s.PartIndex < 0 || s.PartIndex >= len(out.Parts) {
				t.Fatalf("support names part %d of %d", s.PartIndex, len(out.Parts))
			}
			text := out.Parts[s.PartIndex]
			if s.StartIndex < 0 || s.StartIndex >= s.EndIndex || s.EndIndex > len(text) {
				t.Fatalf("support [%d:%d] outside part of %d bytes", s.StartIndex, s.EndIndex, len(text))
			}
			if utf8.ValidString(text) && !utf8.ValidString(text[s.StartIndex:s.EndIndex]) {
				t.Fatalf("support [%d:%d] splits a rune of %q", s.StartIndex, s.EndIndex, text)
			}
			if len(s.ChunkIndices) == 0 {
				t.Fatal("support without chunks")
			}
			for _, c := range s.ChunkIndices {
				if c < 0 || c >= len(out.Grounding.Chunks) {
					t.Fatalf("chunk index %d of %d", c, len(out.Grounding.Chunks))
				}
			}
			if s.Confidence != nil && len(s.Confidence) != len(s.ChunkIndices) {
				t.Fatalf("%d confidences for %d chunks", len(s.Confidence), len(s.ChunkIndices))
			}
		}
	})
}
