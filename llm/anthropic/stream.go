package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/deepgraph/deepgraph/llm"
)

// sseTap sits between an event-stream body and langchaingo's line scanner.
// It passes whole lines on only after line has inspected them (line may drop
// a line, or stop the stream with an error), and at the end of the body asks
// end which error the reader should see: io.EOF for a complete stream, a
// descriptive error for one cut short.
type sseTap struct {
	src  io.ReadCloser
	line func([]byte) (keep bool, err error)
	end  func(readErr error) error

	buf []byte // read, not yet split into lines
	out []byte // inspected, not yet returned
	err error  // returned once out is drained
}

func newSSETap(src io.ReadCloser, line func([]byte) (bool, error), end func(error) error) *sseTap {
	return &sseTap{src: src, line: line, end: end}
}

func (t *sseTap) Read(p []byte) (int, error) {
	for len(t.out) == 0 {
		if t.err != nil {
			return 0, t.err
		}
		t.fill()
	}
	n := copy(p, t.out)
	t.out = t.out[n:]
	return n, nil
}

func (t *sseTap) Close() error { return t.src.Close() }

func (t *sseTap) fill() {
	var chunk [32 << 10]byte
	n, rerr := t.src.Read(chunk[:])
	t.buf = append(t.buf, chunk[:n]...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		line := t.buf[:i]
		t.buf = t.buf[i+1:]
		if !t.emit(line) {
			return
		}
	}
	if len(t.buf) > maxSSELine {
		t.err = t.end(fmt.Errorf("an event-stream line is longer than %d MiB", maxSSELine>>20))
		return
	}
	switch {
	case rerr == io.EOF:
		if len(t.buf) > 0 {
			last := t.buf
			t.buf = nil
			if !t.emit(last) {
				return
			}
		}
		t.err = t.end(nil)
	case rerr != nil:
		t.err = t.end(rerr)
	}
}

// emit inspects one line and queues it; false means the stream is over.
// Lines too long for langchaingo's scanner (bufio.MaxScanTokenSize, which
// would end the stream with "token too long") are inspected but not passed
// on: the reply is assembled from what the transport saw.
func (t *sseTap) emit(line []byte) bool {
	line = bytes.TrimSuffix(line, []byte("\r"))
	keep, err := t.line(line)
	if keep && len(line) < maxPassLine {
		t.out = append(t.out, line...)
		t.out = append(t.out, '\n')
	}
	if err != nil {
		t.err = err
		return false
	}
	return true
}

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
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return true, nil
	}
	var ev event
	if json.Unmarshal(bytes.TrimSpace(data), &ev) != nil {
		// langchaingo fails on data that is not JSON; say why.
		err := &replyError{msg: "the event stream carries data that is not JSON", err: errMalformed}
		c.mu.Lock()
		c.replyErr = err
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
		e := errorObject(ev.Error)
		if e == nil {
			e = &replyError{msg: "the stream reported an error without details", err: errStreamError}
		}
		c.replyErr = e
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
	if c.replyErr != nil {
		return c.replyErr
	}
	if c.spec.stream && !c.reply.complete {
		c.replyErr = &replyError{msg: "the event stream ended before message_stop; the reply is incomplete", err: errTruncated}
		return c.replyErr
	}
	return nil
}

// streamEnd decides how the stream ended: complete only after message_stop.
func (c *call) streamEnd(readErr error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case readErr != nil:
		c.replyErr = &replyError{msg: "the event stream broke off: " + readErr.Error(), err: readErr}
	case c.reply.complete:
		return io.EOF
	default:
		c.replyErr = &replyError{msg: "the event stream ended before message_stop; the reply is incomplete", err: errTruncated}
	}
	return c.replyErr
}
