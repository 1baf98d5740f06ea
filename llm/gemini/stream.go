package gemini

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/deepgraph/deepgraph/internal/httpx"
	"github.com/deepgraph/deepgraph/llm"
)

// stream runs a streaming call, reporting text to onDelta, and returns the
// chunks assembled into one response. A stream that ends or breaks before
// the model finished is an error matching llm.ErrStreamBroken.
func (m *Model) stream(ctx context.Context, c *call, onDelta func(llm.Delta)) (*wireResponse, error) {
	resp, err := m.post(ctx, methodStream, c)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var a assembler
	err = readEvents(resp.Body, func(data []byte, last bool) error {
		var chunk wireResponse
		if err := json.Unmarshal(data, &chunk); err != nil {
			if last {
				// The body ended inside this event: it was cut.
				return errCutEvent
			}
			return m.transportError(fmt.Errorf("a stream event is not a GenerateContentResponse: %w", err), false)
		}
		if chunk.Error != nil {
			status := errorStatus(chunk.Error, resp.StatusCode)
			e := m.apiError(status, chunk.Error, c.combined)
			if httpx.RetryableStatus(status) && e.Err == nil {
				// Overloaded or failing mid-reply, through no fault of the
				// request: a new call may succeed.
				e.Err = llm.ErrStreamBroken
				e.Usage = convertUsage(a.usage)
			}
			return e
		}
		a.add(&chunk, onDelta)
		return nil
	})
	switch {
	case errors.Is(err, errCutEvent):
		return nil, a.truncated()
	case errors.Is(err, errLongLine):
		return nil, m.transportError(err, false)
	case err != nil:
		e := m.transportError(err, true)
		if ae, ok := e.(*llm.APIError); ok {
			ae.Usage = convertUsage(a.usage)
		}
		return nil, e
	}
	if err := a.complete(); err != nil {
		return nil, err
	}
	return a.response(), nil
}

// Errors of readEvents.
var (
	// errCutEvent is a stream whose body ended inside an event.
	errCutEvent = errors.New("the stream ended inside an event")
	// errLongLine is an event-stream line over maxEventLine: a reply at
	// fault, not a cut.
	errLongLine = fmt.Errorf("an event-stream line is longer than %d MiB", maxEventLine>>20)
)

// readEvents reads a server-sent-event stream, calling event with the data
// of each event (its data lines joined by '\n'). An event the body ends in
// without the blank line that closes it is passed on with last set, so the
// caller can tell a cut stream from a final event missing its blank line.
// Comments and fields other than data are skipped. It returns event's first
// error, or a read error (nil at the end of the body).
func readEvents(r io.Reader, event func(data []byte, last bool) error) error {
	br := bufio.NewReaderSize(r, 32<<10)
	var (
		data    []byte
		pending bool // data holds an event not yet passed on
	)
	for {
		line, err := readLine(br)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		eof := err != nil
		switch {
		case len(line) == 0:
			if pending && !eof {
				if err := event(data, false); err != nil {
					return err
				}
				data, pending = data[:0], false
			}
		case line[0] == ':':
			// a comment
		default:
			if payload, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if pending {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimSpace(payload)...)
				pending = true
			}
		}
		if eof {
			if pending {
				return event(data, true)
			}
			return nil
		}
	}
}

// readLine returns the next line without its line ending; at the end of the
// body, the rest and io.EOF. Lines over maxEventLine are an error.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > maxEventLine {
			return nil, errLongLine
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		return line, err
	}
}

// assembler builds the response a unary call would have returned from the
// chunks of a stream. Consecutive text chunks of the same kind (thought or
// not) form one part, as the API counts parts; calls and other parts stay
// separate. Usage and grounding metadata are taken from the last chunk that
// carries them: Gemini resends them whole rather than as increments.
type assembler struct {
	chunks    int
	parts     []assembledPart
	finish    string
	finishMsg string
	grounding *wireGrounding
	usage     *wireUsage
	feedback  *wirePromptFeedback
	version   string
	id        string
}

type assembledPart struct {
	part *wirePart // a copy; for text parts Text is filled in by response
	text *strings.Builder
}

func (a *assembler) add(chunk *wireResponse, onDelta func(llm.Delta)) {
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
	if cand.FinishReason != "" && cand.FinishReason != finishUnspecified {
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
	if a.finish == "" && (a.feedback == nil || a.feedback.BlockReason == "") {
		return a.truncated()
	}
	return nil
}

// truncated is the error for a stream that ended before the model finished,
// matching llm.ErrStreamBroken.
func (a *assembler) truncated() error {
	msg := "the stream ended before the model finished its reply (retry the call)"
	if a.chunks == 0 {
		msg = "the stream ended without any data (retry the call)"
	}
	return &llm.APIError{Provider: provider, Message: msg, Err: llm.ErrStreamBroken, Usage: convertUsage(a.usage)}
}

// response returns the assembled response.
func (a *assembler) response() *wireResponse {
	resp := &wireResponse{
		ModelVersion:   a.version,
		ResponseID:     a.id,
		UsageMetadata:  a.usage,
		PromptFeedback: a.feedback,
	}
	if a.finish == "" && len(a.parts) == 0 && a.grounding == nil {
		return resp // a blocked prompt: no candidate
	}
	content := &wireContent{Role: roleModel}
	for _, ap := range a.parts {
		if ap.text != nil {
			ap.part.Text = ap.text.String()
		}
		content.Parts = append(content.Parts, ap.part)
	}
	resp.Candidates = []*wireCandidate{{
		Content:           content,
		FinishReason:      a.finish,
		FinishMessage:     a.finishMsg,
		GroundingMetadata: a.grounding,
	}}
	return resp
}
