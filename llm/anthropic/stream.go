package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/sdkwire"
)

var errTruncated = fmt.Errorf("event stream ended before message_stop: %w", io.ErrUnexpectedEOF)

// msgTruncated is the message of a stream that ended before message_stop.
const msgTruncated = "the event stream ended before message_stop; the reply is incomplete"

// stream sends a streamed call and assembles the reply from its events.
//
// It opens the stream as the SDK's NewStreaming does — the same request with
// "stream": true, the raw response handed to ssestream — for two things
// NewStreaming hides: the response's Content-Type (a JSON reply must fail
// rather than read as an empty stream), and a body that ends inside an event
// line, which the SDK's decoder drops silently and which is a cut stream.
func (m *Model) stream(ctx context.Context, p prepared, onDelta func(llm.Delta)) (*llm.Response, error) {
	var raw *http.Response
	_, err := m.client.Messages.New(ctx, p.params, option.WithJSONSet("stream", true), option.WithResponseBodyInto(&raw))
	if err != nil {
		return nil, err
	}
	if !sdkwire.IsEventStream(raw) {
		defer raw.Body.Close()
		return nil, sdkwire.NotStream(raw, decodeError)
	}
	return p.readStream(ctx, raw, onDelta)
}

// spentError is a failed stream that had reported tokens (message_start
// comes with the input counts): the accounting counts them.
type spentError struct {
	err   error
	usage llm.Usage
}

func (e *spentError) Error() string { return e.err.Error() }
func (e *spentError) Unwrap() error { return e.err }

// readStream reads a streamed reply from raw, passing text, thinking and the
// structured reply's JSON to onDelta (when set), and closes its body. The
// stream is complete only after message_stop.
func (p prepared) readStream(ctx context.Context, raw *http.Response, onDelta func(llm.Delta)) (*llm.Response, error) {
	raw.Body = sdkwire.LineEnded(raw.Body)
	s := ssestream.NewStream[anthropic.MessageStreamEventUnion](ssestream.NewDecoder(raw), nil)
	defer s.Close()
	st := streamState{blocks: map[int64]*block{}}
	for s.Next() {
		if d := st.add(s.Current(), p); onDelta != nil && (d.Content != "" || d.Reasoning != "") {
			onDelta(d)
		}
	}
	if err := streamErr(ctx, s.Err(), st.complete); err != nil {
		if errors.Is(err, ctx.Err()) && ctx.Err() != nil {
			return nil, err
		}
		return nil, &spentError{err: err, usage: st.usage.neutral()}
	}
	return p.build(st.assembled()), nil
}

// streamErr is the error of a stream that ended with err (nil at the end of
// the body): an error event, a cut, a malformed event, or none when the
// stream completed.
func streamErr(ctx context.Context, err error, complete bool) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err == nil {
		if complete {
			return nil
		}
		return sdkwire.Broken(msgTruncated, errTruncated)
	}
	var ae *anthropic.Error
	var data string
	if errors.As(err, &ae) {
		data = ae.RawJSON()
	} else if rest, ok := strings.CutPrefix(err.Error(), "received error while streaming: "); ok {
		data = rest
	}
	if data != "" {
		var ev struct {
			Error json.RawMessage `json:"error"`
		}
		_ = json.Unmarshal([]byte(data), &ev)
		if e := sdkwire.StreamError(ev.Error, decodeError); e != nil {
			return e
		}
		return &sdkwire.ReplyError{Msg: "the stream reported an error without details", Err: sdkwire.ErrStreamError}
	}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return &sdkwire.ReplyError{Msg: "the event stream carries data that is not JSON", Err: sdkwire.ErrMalformed}
	}
	return sdkwire.StreamEnded(err)
}

// streamState is a streamed reply as its events assemble it.
type streamState struct {
	complete bool
	model    string
	stop     string
	usage    wireUsage
	blocks   map[int64]*block
}

type block struct {
	typ, id, name string
	text          strings.Builder // text, thinking or tool input
}

// wireUsage holds the counters seen so far: message_start reports them,
// message_delta repeats or updates some.
type wireUsage struct{ input, output, cacheCreated, cacheRead int64 }

func (u wireUsage) neutral() llm.Usage {
	return usageOf(u.input, u.output, u.cacheCreated, u.cacheRead)
}

// add takes one event in and returns its delta.
func (s *streamState) add(ev anthropic.MessageStreamEventUnion, p prepared) llm.Delta {
	var d llm.Delta
	switch ev.Type {
	case "message_start":
		s.model = ev.Message.Model
		u := ev.Message.Usage
		s.usage = wireUsage{u.InputTokens, u.OutputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens}
	case "content_block_start":
		s.blocks[ev.Index] = &block{typ: ev.ContentBlock.Type, id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
	case "content_block_delta":
		b := s.blocks[ev.Index]
		if b == nil {
			break
		}
		switch ev.Delta.Type {
		case "text_delta":
			d.Content = ev.Delta.Text
			b.text.WriteString(ev.Delta.Text)
		case "thinking_delta":
			d.Reasoning = ev.Delta.Thinking
			b.text.WriteString(ev.Delta.Thinking)
		case "input_json_delta":
			if b.typ == "tool_use" {
				b.text.WriteString(ev.Delta.PartialJSON)
				if b.name == p.schemaTool && !p.schemaWrapped {
					d.Content = ev.Delta.PartialJSON
				}
			}
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			s.stop = string(ev.Delta.StopReason)
		}
		u := ev.Usage
		if u.JSON.InputTokens.Valid() {
			s.usage.input = u.InputTokens
		}
		if u.JSON.OutputTokens.Valid() {
			s.usage.output = u.OutputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			s.usage.cacheCreated = u.CacheCreationInputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			s.usage.cacheRead = u.CacheReadInputTokens
		}
	case "message_stop":
		s.complete = true
	}
	return d
}

// assembled is the reply the events made, blocks in index order.
func (s *streamState) assembled() assembled {
	a := assembled{model: s.model, stop: s.stop, usage: s.usage.neutral()}
	var text, reasoning strings.Builder
	for _, i := range slices.Sorted(maps.Keys(s.blocks)) {
		b := s.blocks[i]
		switch b.typ {
		case "text":
			text.WriteString(b.text.String())
		case "thinking":
			reasoning.WriteString(b.text.String())
		case "tool_use":
			a.calls = append(a.calls, rawCall{id: b.id, name: b.name, args: b.text.String()})
		}
	}
	a.text, a.reasoning = text.String(), reasoning.String()
	return a
}
