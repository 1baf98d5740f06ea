package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/wiretap"
)

// callSpec is what one Generate call asks of the transport.
type callSpec struct {
	toolChoice      json.RawMessage            // set as tool_choice when non-nil
	dropTemperature bool                       //
	inputs          map[string]json.RawMessage // tool_use id → exact input
	schemaTool      string                     // the structured-output tool, if any
	schemaWrapped   bool                       // its input is {"value": reply}
	names           llm.ToolNames              // the request's tool names on the wire
	stream          bool
	onDelta         func(llm.Delta)
}

// call is the state of one Generate call, shared between Model.send and the
// transport (wiretap.Transport, which may run the stream reader on
// langchaingo's goroutine). Through it the transport
//
//   - edits the JSON body langchaingo built: tool_choice (langchaingo never
//     sends one, so structured output could not force its tool), removal of
//     the temperature it always sends, merging of consecutive messages of a
//     role (langchaingo keeps only the first part of an assistant message, so
//     parts travel as separate messages), and the exact tool-call input JSON;
//   - records the final status, Retry-After and error body, which
//     langchaingo folds into a string (wiretap.Exchange);
//   - reads what langchaingo drops from replies (the model, exact tool input)
//     and watches event streams: it hands out deltas (text, thinking, the
//     structured reply's JSON), drops event types langchaingo would log, and
//     turns an error event or a stream that ends before message_stop into a
//     read error instead of a partial reply or a leaked goroutine.
//
// The transport also removes the x-api-key header for keyless servers and
// adds the configured extra headers.
type call struct {
	spec callSpec

	mu sync.Mutex // guards the fields below
	wiretap.Exchange
	reply replyState
}

var _ wiretap.Call = (*call)(nil)

// whole reports whether the reply arrived complete (message_stop, or a whole
// non-streamed message).
func (c *call) whole() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reply.complete && c.ReplyErr == nil && c.Status == http.StatusOK
}

// replyState is what the transport reads from a reply, streamed or not.
type replyState struct {
	complete   bool // message_stop seen, or a whole non-streamed reply
	model      string
	stopReason string
	usage      wireUsage
	blocks     map[int]*block           // streamed content blocks by index
	inputs     map[string]*bytes.Buffer // tool_use id → exact input JSON
}

type block struct {
	typ, id, name string
	text          strings.Builder // text or thinking
}

type wireUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
}

// merge takes the counters u reports; message_delta repeats or updates some.
func (w *wireUsage) merge(u wireUsage) {
	if u.InputTokens != nil {
		w.InputTokens = u.InputTokens
	}
	if u.OutputTokens != nil {
		w.OutputTokens = u.OutputTokens
	}
	if u.CacheCreationInputTokens != nil {
		w.CacheCreationInputTokens = u.CacheCreationInputTokens
	}
	if u.CacheReadInputTokens != nil {
		w.CacheReadInputTokens = u.CacheReadInputTokens
	}
}

func newCall(spec callSpec) *call {
	return &call{spec: spec, reply: replyState{blocks: map[int]*block{}, inputs: map[string]*bytes.Buffer{}}}
}

// EditRequest applies the body edits of the call's spec.
func (c *call) EditRequest(req *http.Request) error {
	c.mu.Lock()
	c.Sent = true
	c.mu.Unlock()
	return wiretap.EditJSONBody(req, func(body map[string]json.RawMessage) error {
		if c.spec.toolChoice != nil {
			body["tool_choice"] = c.spec.toolChoice
		}
		if c.spec.dropTemperature {
			delete(body, "temperature")
		}
		if msgs, ok := body["messages"]; ok {
			merged, err := mergeMessages(msgs, c.spec.inputs)
			if err != nil {
				return err
			}
			body["messages"] = merged
		}
		return nil
	})
}

// mergeMessages joins consecutive messages of one role into one message with
// all their content blocks, puts each tool_use block's exact input back, and
// drops empty text blocks from messages that have other content (the API
// rejects empty text blocks).
func mergeMessages(raw json.RawMessage, inputs map[string]json.RawMessage) (json.RawMessage, error) {
	var in []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, err
	}
	type message struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	}
	var out []*message
	for _, m := range in {
		var blocks []json.RawMessage
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			b, _ := json.Marshal(map[string]string{"type": "text", "text": text})
			blocks = []json.RawMessage{b}
		} else if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return nil, fmt.Errorf("message content: %w", err)
		}
		for i, b := range blocks {
			var head struct {
				Type string `json:"type"`
				ID   string `json:"id"`
			}
			if json.Unmarshal(b, &head) != nil || head.Type != "tool_use" || inputs[head.ID] == nil {
				continue
			}
			var fields map[string]json.RawMessage
			if json.Unmarshal(b, &fields) != nil {
				continue
			}
			fields["input"] = inputs[head.ID]
			if nb, err := json.Marshal(fields); err == nil {
				blocks[i] = nb
			}
		}
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			continue
		}
		out = append(out, &message{Role: m.Role, Content: blocks})
	}
	for _, m := range out {
		kept := m.Content[:0]
		for _, b := range m.Content {
			if len(m.Content) > 1 && isEmptyText(b) {
				continue
			}
			kept = append(kept, b)
		}
		if len(kept) == 0 {
			kept = m.Content[:1]
		}
		m.Content = kept
	}
	return json.Marshal(out)
}

func isEmptyText(b json.RawMessage) bool {
	var t struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	return json.Unmarshal(b, &t) == nil && t.Type == "text" && strings.TrimSpace(t.Text) == ""
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

// inspectReply reads a non-streamed reply's model, stop reason, usage and
// exact tool inputs. c.mu is held.
func (c *call) inspectReply(body []byte) {
	var r struct {
		Type       string    `json:"type"`
		Model      string    `json:"model"`
		StopReason string    `json:"stop_reason"`
		Usage      wireUsage `json:"usage"`
		Content    []struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &r) != nil {
		return // langchaingo reports the malformed body
	}
	if r.Type == "error" {
		if e := wiretap.ParseError(r.Error, decodeError); e != nil {
			c.ReplyErr = e
			return
		}
	}
	c.reply.complete = r.Type == "message"
	c.reply.model = r.Model
	c.reply.stopReason = r.StopReason
	c.reply.usage = r.Usage
	for _, b := range r.Content {
		if b.Type == "tool_use" && b.ID != "" && len(b.Input) > 0 {
			c.reply.inputs[b.ID] = bytes.NewBuffer(b.Input)
		}
	}
}

var errTruncated = fmt.Errorf("event stream ended before message_stop: %w", io.ErrUnexpectedEOF)

// msgTruncated is the message of a stream that ended before message_stop.
const msgTruncated = "the event stream ended before message_stop; the reply is incomplete"

// errorTypeStatus is the HTTP status Anthropic uses for an error type, so
// that an error event inside a 200 stream matches the same llm sentinels; 0
// for an unknown type.
func errorTypeStatus(typ string) int {
	switch typ {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "api_error":
		return http.StatusInternalServerError
	case "overloaded_error":
		return 529
	}
	return 0
}

// decodeError reads Anthropic's {"type", "message"} error object: the
// message is "type: message", and the type gives the status.
func decodeError(raw json.RawMessage) (msg string, status int, ok bool) {
	var o struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return "", 0, false
	}
	msg = o.Message
	if o.Type != "" {
		if msg == "" {
			msg = o.Type
		} else {
			msg = o.Type + ": " + msg
		}
	}
	return msg, errorTypeStatus(o.Type), true
}
