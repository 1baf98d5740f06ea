package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"io"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/wiretap"
)

// event is one Messages API stream event, with the fields the transport
// needs.
type event struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message struct {
		Model string    `json:"model"`
		Usage wireUsage `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// streamLine inspects one event-stream line (on the reader's goroutine).
// Event types langchaingo does not know are dropped: it would log them.
func (c *call) streamLine(line []byte) (bool, error) {
	data, ok := wiretap.SSEData(line)
	if !ok {
		return true, nil
	}
	var ev event
	if json.Unmarshal(data, &ev) != nil {
		// langchaingo fails on data that is not JSON; say why.
		err := &wiretap.ReplyError{Msg: "the event stream carries data that is not JSON", Err: wiretap.ErrMalformed}
		c.mu.Lock()
		c.ReplyErr = err
		c.mu.Unlock()
		return false, err
	}
	var d llm.Delta
	c.mu.Lock()
	r := &c.reply
	switch ev.Type {
	case "message_start":
		r.model = ev.Message.Model
		r.usage.merge(ev.Message.Usage)
	case "content_block_start":
		b := &block{typ: ev.ContentBlock.Type, id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
		r.blocks[ev.Index] = b
		if b.typ == "tool_use" && b.id != "" {
			r.inputs[b.id] = &bytes.Buffer{}
		}
	case "content_block_delta":
		switch ev.Delta.Type {
		case "text_delta":
			d.Content = ev.Delta.Text
			if b := r.blocks[ev.Index]; b != nil {
				b.text.WriteString(ev.Delta.Text)
			}
		case "thinking_delta":
			d.Reasoning = ev.Delta.Thinking
			if b := r.blocks[ev.Index]; b != nil {
				b.text.WriteString(ev.Delta.Thinking)
			}
		case "input_json_delta":
			if b := r.blocks[ev.Index]; b != nil && b.typ == "tool_use" {
				if buf := r.inputs[b.id]; buf != nil {
					buf.WriteString(ev.Delta.PartialJSON)
				}
				if b.name == c.spec.schemaTool && !c.spec.schemaWrapped {
					d.Content = ev.Delta.PartialJSON
				}
			}
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			r.stopReason = ev.Delta.StopReason
		}
		if ev.Usage != nil {
			r.usage.merge(*ev.Usage)
		}
	case "message_stop":
		r.complete = true
	case "content_block_stop", "ping":
	case "error":
		e := wiretap.StreamError(ev.Error, decodeError)
		if e == nil {
			e = &wiretap.ReplyError{Msg: "the stream reported an error without details", Err: wiretap.ErrStreamError}
		}
		c.ReplyErr = e
		c.mu.Unlock()
		return false, e
	default:
		c.mu.Unlock()
		return false, nil
	}
	c.mu.Unlock()
	if c.spec.onDelta != nil && (d.Content != "" || d.Reasoning != "") {
		c.spec.onDelta(d)
	}
	return true, nil
}

// check catches what langchaingo could report as success although the reply
// is not whole (a cancelled context, an error the transport recorded, a
// stream without message_stop).
func (c *call) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ReplyErr != nil {
		return c.ReplyErr
	}
	if c.spec.stream && !c.reply.complete {
		c.ReplyErr = wiretap.Broken(msgTruncated, errTruncated)
		return c.ReplyErr
	}
	return nil
}

// streamEnd decides how the stream ended: complete only after message_stop.
func (c *call) streamEnd(readErr error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case readErr != nil:
		c.ReplyErr = wiretap.StreamEnded(readErr)
	case c.reply.complete:
		return io.EOF
	default:
		c.ReplyErr = wiretap.Broken(msgTruncated, errTruncated)
	}
	return c.ReplyErr
}
