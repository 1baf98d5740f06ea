package gemini

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// convert maps a complete reply (unary, or assembled from a stream)
// to an llm.Response.
func (m *Model) convert(resp *wireResponse) (*llm.Response, error) {
	if resp == nil {
		return nil, &llm.APIError{Provider: provider, Message: "the API returned an empty reply", Err: errEmptyReply}
	}
	out, err := convertResponse(resp)
	if err != nil {
		return nil, err
	}
	if out.Model == "" {
		out.Model = m.model
	}
	return out, nil
}

// convertResponse does the work of convert. It never panics on missing or
// inconsistent fields: the reply is untrusted input.
func convertResponse(resp *wireResponse) (*llm.Response, error) {
	out := &llm.Response{Model: resp.ModelVersion, Usage: convertUsage(resp.UsageMetadata)}
	var cand *wireCandidate
	if len(resp.Candidates) > 0 {
		cand = resp.Candidates[0]
	}
	if cand == nil {
		if resp.PromptFeedback != nil && resp.PromptFeedback.BlockReason != "" {
			// The prompt itself was blocked: no candidate at all.
			out.FinishReason = llm.FinishContentFilter
			return out, nil
		}
		return nil, &llm.APIError{Provider: provider, Message: "the reply has no candidates", Err: errEmptyReply}
	}

	var (
		parts     []*wirePart
		content   strings.Builder
		reasoning strings.Builder
	)
	if cand.Content != nil {
		parts = cand.Content.Parts
	}
	// partIndex maps an index into the candidate's parts (what grounding
	// segments count) to an index into out.Parts, or -1.
	partIndex := make([]int, len(parts))
	for i, p := range parts {
		partIndex[i] = -1
		switch {
		case p == nil:
		case p.FunctionCall != nil:
			out.ToolCalls = append(out.ToolCalls, toolCall(p))
		case p.Thought:
			reasoning.WriteString(p.Text)
		case isTextPart(p) && p.Text != "":
			partIndex[i] = len(out.Parts)
			out.Parts = append(out.Parts, p.Text)
			content.WriteString(p.Text)
		}
	}
	out.Content = content.String()
	out.Reasoning = reasoning.String()
	out.FinishReason = finishReason(cand.FinishReason, len(out.ToolCalls) > 0)
	out.Grounding = convertGrounding(cand.GroundingMetadata, partIndex, out.Parts)
	return out, nil
}

// isTextPart reports whether p carries text only (no call, media or code).
func isTextPart(p *wirePart) bool {
	return p.FunctionCall == nil && p.FunctionResponse == nil && p.InlineData == nil &&
		p.FileData == nil && p.ExecutableCode == nil && p.CodeExecutionResult == nil &&
		p.ToolCall == nil && p.ToolResponse == nil
}

// toolCall maps a functionCall part, keeping its thought signature.
func toolCall(p *wirePart) schemas.ToolCall {
	fc := p.FunctionCall
	id := fc.ID
	if id == "" {
		id = newCallID()
	}
	args := json.RawMessage("{}")
	if trimmed := bytes.TrimSpace(fc.Args); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		var buf bytes.Buffer
		if json.Compact(&buf, trimmed) == nil {
			args = buf.Bytes()
		}
	}
	tc := schemas.ToolCall{ID: id, Name: fc.Name, Arguments: args}
	if len(p.ThoughtSignature) > 0 {
		tc.Signature = append([]byte(nil), p.ThoughtSignature...)
	}
	return tc
}

// newCallID makes a unique tool-call ID for calls the API sent without one.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return generatedIDPrefix + hex.EncodeToString(b[:])
}

// Finish reasons of the API (Candidate.finishReason) that map to something
// other than llm.FinishOther.
const (
	finishUnspecified            = "FINISH_REASON_UNSPECIFIED"
	finishStop                   = "STOP"
	finishMaxTokens              = "MAX_TOKENS"
	finishSafety                 = "SAFETY"
	finishRecitation             = "RECITATION"
	finishBlocklist              = "BLOCKLIST"
	finishProhibitedContent      = "PROHIBITED_CONTENT"
	finishSPII                   = "SPII"
	finishImageSafety            = "IMAGE_SAFETY"
	finishImageProhibitedContent = "IMAGE_PROHIBITED_CONTENT"
	finishImageRecitation        = "IMAGE_RECITATION"
)

// finishReason normalises Gemini's finish reasons.
func finishReason(r string, toolCalls bool) llm.FinishReason {
	switch r {
	case "", finishStop, finishUnspecified:
		if toolCalls {
			return llm.FinishToolCalls
		}
		return llm.FinishStop
	case finishMaxTokens:
		return llm.FinishLength
	case finishSafety, finishRecitation, finishBlocklist, finishProhibitedContent, finishSPII,
		finishImageSafety, finishImageProhibitedContent, finishImageRecitation:
		return llm.FinishContentFilter
	}
	return llm.FinishOther
}

// convertUsage maps token counts. Tool-use prompt tokens (search results fed
// to the model) are billed as input, so they count as prompt tokens.
func convertUsage(u *wireUsage) llm.Usage {
	if u == nil {
		return llm.Usage{}
	}
	out := llm.Usage{
		PromptTokens:     u.PromptTokenCount + u.ToolUsePromptTokenCount,
		CompletionTokens: u.CandidatesTokenCount,
		TotalTokens:      u.TotalTokenCount,
		CachedTokens:     u.CachedContentTokenCount,
		ReasoningTokens:  u.ThoughtsTokenCount,
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.PromptTokens + out.CompletionTokens + out.ReasoningTokens
	}
	return out
}

// convertGrounding maps grounding metadata. partIndex maps the API's part
// indices to indices into parts (the text parts). Chunks that are not web
// pages are left out and chunk indices renumbered; supports that point
// nowhere usable are dropped; offsets are made safe Go string indices into
// parts[PartIndex]. It returns nil when nothing usable is left.
func convertGrounding(gm *wireGrounding, partIndex []int, parts []string) *llm.Grounding {
	if gm == nil {
		return nil
	}
	g := &llm.Grounding{}
	for _, q := range gm.WebSearchQueries {
		if q != "" {
			g.WebSearchQueries = append(g.WebSearchQueries, q)
		}
	}
	chunkIndex := make([]int, len(gm.GroundingChunks))
	for i, c := range gm.GroundingChunks {
		chunkIndex[i] = -1
		if c == nil || c.Web == nil || c.Web.URI == "" {
			continue
		}
		chunkIndex[i] = len(g.Chunks)
		g.Chunks = append(g.Chunks, llm.GroundingChunk{URI: c.Web.URI, Title: c.Web.Title})
	}
	for _, s := range gm.GroundingSupports {
		if sup, ok := convertSupport(s, chunkIndex, partIndex, parts); ok {
			g.Supports = append(g.Supports, sup)
		}
	}
	if gm.SearchEntryPoint != nil {
		g.SearchEntryPoint = gm.SearchEntryPoint.RenderedContent
	}
	if len(g.WebSearchQueries) == 0 && len(g.Chunks) == 0 && len(g.Supports) == 0 && g.SearchEntryPoint == "" {
		return nil
	}
	return g
}

func convertSupport(s *wireGroundingSupport, chunkIndex, partIndex []int, parts []string) (llm.GroundingSupport, bool) {
	if s == nil || s.Segment == nil {
		return llm.GroundingSupport{}, false
	}
	seg := s.Segment
	// Missing startIndex/partIndex decode as 0, which is what the API means
	// by omitting them.
	var (
		part, start, end int
		ok               bool
	)
	if pi := seg.PartIndex; pi >= 0 && pi < len(partIndex) && partIndex[pi] >= 0 {
		part = partIndex[pi]
		start, end, ok = locateSegment(parts[part], seg.StartIndex, seg.EndIndex, seg.Text)
	} else {
		// The index names no text part: fall back to the part holding the
		// segment's text, if the API sent it.
		part, start, end, ok = findSegment(parts, seg.StartIndex, seg.Text)
	}
	if !ok {
		return llm.GroundingSupport{}, false
	}
	text := parts[part]
	sup := llm.GroundingSupport{StartIndex: start, EndIndex: end, PartIndex: part, Text: seg.Text}
	if sup.Text == "" {
		sup.Text = text[start:end]
	}
	withConfidence := len(s.ConfidenceScores) == len(s.GroundingChunkIndices)
	for j, ci := range s.GroundingChunkIndices {
		if ci < 0 || ci >= len(chunkIndex) || chunkIndex[ci] < 0 {
			continue
		}
		sup.ChunkIndices = append(sup.ChunkIndices, chunkIndex[ci])
		if withConfidence {
			sup.Confidence = append(sup.Confidence, s.ConfidenceScores[j])
		}
	}
	if len(sup.ChunkIndices) == 0 {
		return llm.GroundingSupport{}, false
	}
	return sup, true
}

// locateSegment turns a segment's byte offsets into safe indices of text:
// clamped to its length and moved forward onto rune boundaries. When the
// offsets do not cover the segment text the API sent along (a unit or part
// mix-up), the occurrence of that text nearest to start is used instead.
func locateSegment(text string, start, end int, segText string) (int, int, bool) {
	start = runeBoundary(text, min(max(start, 0), len(text)))
	end = runeBoundary(text, min(max(end, 0), len(text)))
	if segText != "" && (start >= end || text[start:end] != segText) {
		if i := nearestIndex(text, segText, start); i >= 0 {
			return i, i + len(segText), true
		}
	}
	if start >= end {
		return 0, 0, false
	}
	return start, end, true
}

// findSegment looks for segText in the first text part that holds it,
// nearest to start there.
func findSegment(parts []string, start int, segText string) (int, int, int, bool) {
	if segText == "" {
		return 0, 0, 0, false
	}
	for j, p := range parts {
		if i := nearestIndex(p, segText, start); i >= 0 {
			return j, i, i + len(segText), true
		}
	}
	return 0, 0, 0, false
}

// runeBoundary moves i forward to the next rune boundary of s (or len(s)).
func runeBoundary(s string, i int) int {
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}

// nearestIndex returns the index of the occurrence of sub in s closest to
// near, or -1.
func nearestIndex(s, sub string, near int) int {
	best := -1
	for from := 0; from <= len(s)-len(sub); {
		i := strings.Index(s[from:], sub)
		if i < 0 {
			break
		}
		i += from
		if best < 0 || abs(i-near) < abs(best-near) {
			best = i
		}
		if i > near {
			break // later occurrences are only farther away
		}
		from = i + 1
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// errEmptyReply is the cause of replies without anything in them.
var errEmptyReply = errors.New("empty reply")
