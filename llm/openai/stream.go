package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/sdkwire"
	"github.com/deepgraph/deepgraph/schemas"
)

var errTruncated = fmt.Errorf("event stream ended before its end marker: %w", io.ErrUnexpectedEOF)

// msgTruncated is the message of a stream that ended without its end marker.
const msgTruncated = "the event stream ended before [DONE] or a finish_reason; the reply is incomplete"

// stream sends a streamed call and assembles the reply from its chunks.
//
// It opens the stream as the SDK's NewStreaming does — the same request with
// "stream": true, the raw response handed to ssestream — rather than calling
// NewStreaming, for two things NewStreaming hides: the response's
// Content-Type (a server that ignores the request for a stream answers with
// JSON, which must fail rather than read as an empty stream), and whether the
// stream ended with [DONE] (a stream that simply stops is cut off, not done).
func (m *Model) stream(ctx context.Context, p prepared, onDelta func(llm.Delta)) (*llm.Response, error) {
	var raw *http.Response
	_, err := m.client.Chat.Completions.New(ctx, p.params, option.WithJSONSet("stream", true), option.WithResponseBodyInto(&raw))
	if err != nil {
		return nil, err
	}
	if !sdkwire.IsEventStream(raw) {
		defer raw.Body.Close()
		return nil, sdkwire.NotStream(raw, decodeError)
	}
	return readStream(ctx, raw, p.names, onDelta)
}

// readStream reads a streamed reply from raw, a 200 event stream, passing
// deltas to onDelta (when set), and closes its body. A stream is complete
// when it sent [DONE] or a finish_reason (some servers close without
// [DONE]); one that stops before is cut off (llm.ErrStreamBroken).
func readStream(ctx context.Context, raw *http.Response, names llm.ToolNames, onDelta func(llm.Delta)) (*llm.Response, error) {
	dec := &doneDecoder{Decoder: ssestream.NewDecoder(raw)}
	s := ssestream.NewStream[openai.ChatCompletionChunk](dec, nil)
	defer s.Close()
	st := streamState{byIndex: map[int64]*toolCallBuilder{}}
	for s.Next() {
		if d := st.add(s.Current()); onDelta != nil && (d.Content != "" || d.Reasoning != "") {
			onDelta(d)
		}
	}
	if err := s.Err(); err != nil {
		var se *ssestream.StreamError
		if errors.As(err, &se) {
			var ev struct {
				Error json.RawMessage `json:"error"`
			}
			_ = json.Unmarshal(se.Event.Data, &ev)
			if e := sdkwire.StreamError(ev.Error, decodeError); e != nil {
				return nil, e
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return nil, &sdkwire.ReplyError{Msg: "the event stream carries a chunk that is not JSON: " + err.Error(), Err: sdkwire.ErrMalformed}
		}
		return nil, sdkwire.StreamEnded(err)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if !dec.done && st.finish == "" {
		return nil, sdkwire.Broken(msgTruncated, errTruncated)
	}
	calls := st.toolCalls()
	if err := nameCalls(calls, names); err != nil {
		return nil, err
	}
	return &llm.Response{
		Content:      st.content.String(),
		Reasoning:    st.reasoning.String(),
		Model:        st.model,
		Usage:        st.usage,
		ToolCalls:    calls,
		FinishReason: finishReason(st.finish, len(calls) > 0),
	}, nil
}

// doneDecoder is the SDK's event decoder, noting whether the stream sent
// its end marker, [DONE].
type doneDecoder struct {
	ssestream.Decoder
	done bool
}

func (d *doneDecoder) Next() bool {
	ok := d.Decoder.Next()
	if ok && bytes.HasPrefix(d.Event().Data, []byte("[DONE]")) {
		d.done = true
	}
	return ok
}

// streamState is a streamed reply as its chunks assemble it.
type streamState struct {
	model     string
	finish    string
	content   strings.Builder
	reasoning strings.Builder
	usage     llm.Usage
	calls     []*toolCallBuilder
	byIndex   map[int64]*toolCallBuilder
}

type toolCallBuilder struct {
	id, name string
	args     strings.Builder
}

// add takes one chunk in and returns its delta.
func (s *streamState) add(ch openai.ChatCompletionChunk) llm.Delta {
	if ch.Model != "" {
		s.model = ch.Model
	}
	if ch.JSON.Usage.Valid() {
		s.usage = usage(ch.Usage)
	}
	var d llm.Delta
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue
		}
		d.Content += choice.Delta.Content
		r := reasoning(choice.Delta.JSON.ExtraFields)
		d.Reasoning += r
		s.content.WriteString(choice.Delta.Content)
		s.reasoning.WriteString(r)
		for _, tc := range choice.Delta.ToolCalls {
			s.addToolCall(tc)
		}
		if choice.FinishReason != "" {
			s.finish = choice.FinishReason
		}
	}
	return d
}

// addToolCall merges a streamed tool-call fragment, by index when the server
// sends one (OpenAI does; fragments of parallel calls may interleave), else
// by ID, else into the latest call.
func (s *streamState) addToolCall(tc openai.ChatCompletionChunkChoiceDeltaToolCall) {
	var b *toolCallBuilder
	switch {
	case tc.JSON.Index.Valid():
		b = s.byIndex[tc.Index]
		if b == nil {
			b = &toolCallBuilder{}
			s.byIndex[tc.Index] = b
			s.calls = append(s.calls, b)
		}
	case len(s.calls) > 0 && (tc.ID == "" || tc.ID == s.calls[len(s.calls)-1].id):
		b = s.calls[len(s.calls)-1]
	default:
		b = &toolCallBuilder{}
		s.calls = append(s.calls, b)
	}
	if b.id == "" {
		b.id = tc.ID
	}
	if b.name == "" {
		b.name = tc.Function.Name
	}
	if raw := tc.Function.JSON.Arguments.Raw(); tc.Function.Arguments == "" && len(raw) > 0 && raw[0] == '{' {
		// Some servers send the arguments as a JSON object, not a string.
		b.args.WriteString(raw)
		return
	}
	b.args.WriteString(tc.Function.Arguments)
}

func (s *streamState) toolCalls() []schemas.ToolCall {
	if len(s.calls) == 0 {
		return nil
	}
	out := make([]schemas.ToolCall, 0, len(s.calls))
	for _, b := range s.calls {
		out = append(out, schemas.ToolCall{ID: b.id, Name: b.name, Arguments: sdkwire.ToolCallArguments(b.args.String())})
	}
	return out
}
