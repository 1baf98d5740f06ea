package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/wiretap"
)

// callSpec is what one Generate call asks of the transport.
type callSpec struct {
	responseFormat    json.RawMessage // replaces response_format when set
	dropTemperature   bool
	dropStreamOptions bool
	stream            bool
	onDelta           func(llm.Delta)
	names             llm.ToolNames // the request's tool names on the wire
}

// call is the state of one Generate call, shared between Model.send and the
// transport (wiretap.Transport, which may run the stream reader on
// langchaingo's goroutine). Through it the transport
//
//   - edits the JSON body langchaingo built: the per-call json_schema
//     response_format (langchaingo only has a per-client one, with a schema
//     type too narrow for anyOf, min/max, $defs, …), removal of the
//     temperature it always sends, removal of stream_options;
//   - records the final status, Retry-After and error body, which
//     langchaingo folds into a string (wiretap.Exchange);
//   - reads what langchaingo drops from replies (the model name, the
//     "reasoning" field some servers use instead of "reasoning_content") and
//     watches event streams: it hands out deltas, assembles tool calls by
//     index, and turns a stream that stops before its end marker, or carries
//     an error object, into a read error instead of a silently partial reply.
//
// The transport also removes the Authorization header for keyless servers
// and adds the configured extra headers.
type call struct {
	spec callSpec

	mu sync.Mutex // guards the fields below
	wiretap.Exchange
	model     string
	reasoning string // non-streamed "reasoning" field
	stream    streamState
}

var _ wiretap.Call = (*call)(nil)

func newCall(spec callSpec) *call {
	return &call{spec: spec, stream: streamState{byIndex: map[int]*toolCallBuilder{}}}
}

// EditRequest applies the body edits of the call's spec.
func (c *call) EditRequest(req *http.Request) error {
	c.mu.Lock()
	c.Sent = true
	c.mu.Unlock()
	s := c.spec
	if s.responseFormat == nil && !s.dropTemperature && !s.dropStreamOptions {
		return nil
	}
	return wiretap.EditJSONBody(req, func(body map[string]json.RawMessage) error {
		if s.responseFormat != nil {
			body["response_format"] = s.responseFormat
		}
		if s.dropTemperature {
			delete(body, "temperature")
		}
		if s.dropStreamOptions {
			delete(body, "stream_options")
		}
		return nil
	})
}

// Observe records the exchange and reads the reply (wiretap.Exchange.Record).
func (c *call) Observe(resp *http.Response, err error) (*http.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Record(resp, err, wiretap.Reply{
		Stream:  c.spec.stream,
		Inspect: c.inspectReply,
		Line:    c.streamLine,
		End:     c.streamEnd,
		Decode:  decodeError,
	})
}

// inspectReply reads from a non-streamed reply what langchaingo drops. c.mu is
// held.
func (c *call) inspectReply(body []byte) {
	var r struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Reasoning string `json:"reasoning"`
			} `json:"message"`
		} `json:"choices"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &r) != nil {
		return // langchaingo reports the malformed body
	}
	c.model = r.Model
	if len(r.Choices) > 0 {
		c.reasoning = r.Choices[0].Message.Reasoning
	} else if e := wiretap.ParseError(r.Error, decodeError); e != nil {
		c.ReplyErr = e
	}
}

var errTruncated = fmt.Errorf("event stream ended before its end marker: %w", io.ErrUnexpectedEOF)

// msgTruncated is the message of a stream that ended without its end marker.
const msgTruncated = "the event stream ended before [DONE] or a finish_reason; the reply is incomplete"

// decodeError reads an "error" object as OpenAI and compatible servers send
// it: {"message", "type", "code"}; the message falls back to the type, and
// a code in the HTTP error range is the status.
func decodeError(raw json.RawMessage) (msg string, status int, ok bool) {
	var o struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return "", 0, false
	}
	msg = o.Message
	if msg == "" {
		msg = o.Type
	}
	var code int
	if json.Unmarshal(o.Code, &code) == nil && code >= 400 && code <= 599 {
		status = code
	}
	return msg, status, true
}
