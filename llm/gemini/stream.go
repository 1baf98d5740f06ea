package gemini

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/genai"

	"github.com/deepgraph/deepgraph/llm"
)

// errTruncated is the cause of a stream that ended before the model finished.
var errTruncated = errors.New("stream ended before the reply was complete")

// stream runs a streaming call, reporting text to onDelta, and returns the
// chunks assembled into one response.
func (m *Model) stream(ctx context.Context, c *call, onDelta func(llm.Delta)) (*genai.GenerateContentResponse, error) {
	var a assembler
	for chunk, err := range m.client.Models.GenerateContentStream(ctx, m.model, c.contents, c.config) {
		if err != nil {
			return nil, err
		}
		a.add(chunk, onDelta)
	}
	if err := a.complete(); err != nil {
		return nil, err
	}
	return a.response(), nil
}

// assembler builds the response a unary call would have returned from the
// chunks of a stream. Consecutive text chunks of the same kind (thought or
// not) form one part, as the API counts parts; calls and other parts stay
// separate. Usage and grounding metadata are taken from the last chunk that
// carries them: Gemini resends them whole rather than as increments.
type assembler struct {
	chunks    int
	parts     []assembledPart
	finish    genai.FinishReason
	finishMsg string
	grounding *genai.GroundingMetadata
	usage     *genai.GenerateContentResponseUsageMetadata
	feedback  *genai.GenerateContentResponsePromptFeedback
	version   string
	id        string
}

type assembledPart struct {
	part *genai.Part // a copy; for text parts Text is filled in by response
	text *strings.Builder
}

func (a *assembler) add(chunk *genai.GenerateContentResponse, onDelta func(llm.Delta)) {
	if chunk == nil {
		return
	}
	a.chunks++
	if chunk.ModelVersion != "" {
		a.version = chunk.ModelVersion
	}
	if chunk.ResponseID != "" {
		a.id = chunk.ResponseID
	}
	if chunk.UsageMetadata != nil {
		a.usage = chunk.UsageMetadata
	}
	if chunk.PromptFeedback != nil {
		a.feedback = chunk.PromptFeedback
	}
	if len(chunk.Candidates) == 0 || chunk.Candidates[0] == nil {
		return
	}
	cand := chunk.Candidates[0]
	if cand.FinishReason != "" && cand.FinishReason != genai.FinishReasonUnspecified {
		a.finish, a.finishMsg = cand.FinishReason, cand.FinishMessage
	}
	if cand.GroundingMetadata != nil {
		a.grounding = cand.GroundingMetadata
	}
	if cand.Content == nil {
		return
	}
	for _, p := range cand.Content.Parts {
		if p == nil {
			continue
		}
		if !isTextPart(p) {
			cp := *p
			a.parts = append(a.parts, assembledPart{part: &cp})
			continue
		}
		if p.Text != "" && onDelta != nil {
			if p.Thought {
				onDelta(llm.Delta{Reasoning: p.Text})
			} else {
				onDelta(llm.Delta{Content: p.Text})
			}
		}
		if n := len(a.parts); n > 0 && a.parts[n-1].text != nil && a.parts[n-1].part.Thought == p.Thought {
			last := a.parts[n-1]
			last.text.WriteString(p.Text)
			if len(p.ThoughtSignature) > 0 {
				last.part.ThoughtSignature = p.ThoughtSignature
			}
			continue
		}
		cp := *p
		b := &strings.Builder{}
		b.WriteString(p.Text)
		a.parts = append(a.parts, assembledPart{part: &cp, text: b})
	}
}

// complete reports a stream that ended without the model finishing: no
// chunk, or no finish reason and no blocked prompt. Such a reply is partial
// and must not pass for a whole one.
func (a *assembler) complete() error {
	switch {
	case a.chunks == 0:
		return &llm.APIError{Provider: provider, Message: "the stream ended without any data (retry the call)", Err: errTruncated}
	case a.finish == "" && (a.feedback == nil || a.feedback.BlockReason == ""):
		return &llm.APIError{Provider: provider, Message: "the stream ended before the model finished its reply (retry the call)", Err: errTruncated}
	}
	return nil
}

// response returns the assembled response.
func (a *assembler) response() *genai.GenerateContentResponse {
	resp := &genai.GenerateContentResponse{
		ModelVersion:   a.version,
		ResponseID:     a.id,
		UsageMetadata:  a.usage,
		PromptFeedback: a.feedback,
	}
	if a.finish == "" && len(a.parts) == 0 && a.grounding == nil {
		return resp // a blocked prompt: no candidate
	}
	content := &genai.Content{Role: genai.RoleModel}
	for _, ap := range a.parts {
		if ap.text != nil {
			ap.part.Text = ap.text.String()
		}
		content.Parts = append(content.Parts, ap.part)
	}
	resp.Candidates = []*genai.Candidate{{
		Content:           content,
		FinishReason:      a.finish,
		FinishMessage:     a.finishMsg,
		GroundingMetadata: a.grounding,
	}}
	return resp
}
