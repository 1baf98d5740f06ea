package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/deepgraph/deepgraph/internal/httpx"
	"github.com/deepgraph/deepgraph/llm"
)

// Limits on what is buffered from a server.
const (
	maxErrorBody = 1 << 20  // an error reply's body
	maxReplyBody = 64 << 20 // a non-streamed reply
	maxSSELine   = 8 << 20  // one line of an event stream
	maxPassLine  = 32 << 10 // longest line handed to langchaingo's scanner
)

// wire is the package's http.RoundTripper, between langchaingo and the
// retrying transport of llm.ClientConfig. For the call carried in the request
// context it
//
//   - edits the JSON body langchaingo built: tool_choice (langchaingo never
//     sends one, so structured output could not force its tool), removal of
//     the temperature it always sends, merging of consecutive messages of a
//     role (langchaingo keeps only the first part of an assistant message, so
//     parts travel as separate messages), and the exact tool-call input JSON;
//   - records the final status, Retry-After and error body, which
//     langchaingo folds into a string;
//   - reads what langchaingo drops from replies (the model, exact tool input)
//     and watches event streams: it hands out deltas (text, thinking, the
//     structured reply's JSON), drops event types langchaingo would log, and
//     turns an error event or a stream that ends before message_stop into a
//     read error instead of a partial reply or a leaked goroutine.
//
// It also removes the x-api-key header for keyless servers and adds the
// configured extra headers.
type wire struct {
	next    http.RoundTripper
	keyless bool
	header  http.Header
}

func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	c, _ := req.Context().Value(callKey{}).(*call)
	out := req.Clone(req.Context())
	if w.keyless {
		out.Header.Del("X-Api-Key")
	}
	for k, vs := range w.header {
		if strings.EqualFold(k, "X-Api-Key") {
			continue
		}
		out.Header.Del(k)
		for _, v := range vs {
			out.Header.Add(k, v)
		}
	}
	if c == nil {
		return w.next.RoundTrip(out)
	}
	if err := c.editBody(out); err != nil {
		return nil, err
	}
	resp, err := w.next.RoundTrip(out)
	return c.observe(resp, err)
}

type callKey struct{}

func withCall(ctx context.Context, c *call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// callSpec is what one Generate call asks of the transport.
type callSpec struct {
	toolChoice      json.RawMessage            // set as tool_choice when non-nil
	dropTemperature bool                       //
	inputs          map[string]json.RawMessage // tool_use id → exact input
	schemaTool      string                     // the structured-output tool, if any
	schemaWrapped   bool                       // its input is {"value": reply}
	stream          bool
	onDelta         func(llm.Delta)
}

// call is the state of one Generate call, shared between Model.send and the
// transport (which may run the stream reader on langchaingo's goroutine).
type call struct {
	spec callSpec

	mu           sync.Mutex
	sent         bool
	transportErr error
	status       int
	retryAfter   time.Duration
	errBody      []byte
	replyErr     error // a reply that is not a usable answer despite status 200
	reply        replyState
}

// whole reports whether the reply arrived complete (message_stop, or a whole
// non-streamed message).
func (c *call) whole() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reply.complete && c.replyErr == nil && c.status == http.StatusOK
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

func (c *call) editBody(req *http.Request) error {
	c.mu.Lock()
	c.sent = true
	c.mu.Unlock()
	if req.Body == nil {
		return nil
	}
	data, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return fmt.Errorf("reading the request body: %w", err)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(data, &body); err != nil {
		return fmt.Errorf("editing the request body: %w", err)
	}
	if c.spec.toolChoice != nil {
		body["tool_choice"] = c.spec.toolChoice
	}
	if c.spec.dropTemperature {
		delete(body, "temperature")
	}
	if msgs, ok := body["messages"]; ok {
		merged, err := mergeMessages(msgs, c.spec.inputs)
		if err != nil {
			return fmt.Errorf("editing the request body: %w", err)
		}
		body["messages"] = merged
	}
	if data, err = json.Marshal(body); err != nil {
		return fmt.Errorf("editing the request body: %w", err)
	}
	req.Body = io.NopCloser(bytes.NewReader(data))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	req.ContentLength = int64(len(data))
	return nil
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

func (c *call) observe(resp *http.Response, err error) (*http.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.transportErr = err
		return nil, err
	}
	c.status = resp.StatusCode
	if d, ok := httpx.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
		c.retryAfter = d
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		c.errBody = body
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	if c.spec.stream {
		if ct := resp.Header.Get("Content-Type"); strings.Contains(ct, "json") {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			resp.Body.Close()
			msg := "asked for an event stream but the server replied with " + ct
			if m := errorMessage(body); m != "" {
				msg += ": " + m
			}
			c.replyErr = &replyError{msg: msg, err: errNotStream}
			resp.Body = io.NopCloser(failingReader{c.replyErr})
			return resp, nil
		}
		resp.Body = newSSETap(resp.Body, c.streamLine, c.streamEnd)
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBody+1))
	resp.Body.Close()
	switch {
	case err != nil:
		c.replyErr = &replyError{msg: "reading the reply: " + err.Error(), err: err}
	case len(body) > maxReplyBody:
		c.replyErr = &replyError{msg: fmt.Sprintf("the reply is larger than %d MiB", maxReplyBody>>20), err: errMalformed}
	}
	if c.replyErr != nil {
		resp.Body = io.NopCloser(failingReader{c.replyErr})
		return resp, nil
	}
	c.inspectReply(body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
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
		if e := errorObject(r.Error); e != nil {
			c.replyErr = e
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

// replyError is a reply that cannot be used although the HTTP status was 200:
// an error object in the body or stream, a stream cut short, a body that does
// not parse. status is the HTTP status the error type stands for, if any.
type replyError struct {
	status int
	msg    string
	err    error
}

func (e *replyError) Error() string { return e.msg }
func (e *replyError) Unwrap() error { return e.err }

var (
	errTruncated   = fmt.Errorf("event stream ended before message_stop: %w", io.ErrUnexpectedEOF)
	errStreamError = errors.New("error event in the reply")
	errNotStream   = errors.New("reply is not an event stream")
)

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

// errorObject reads Anthropic's {"type", "message"} error object (or a
// plain string, as some gateways send). It returns nil for an absent or null
// member.
func errorObject(raw json.RawMessage) *replyError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	e := &replyError{err: errStreamError}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		e.msg = s
		return e
	}
	var o struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &o) != nil {
		e.msg = string(raw)
		return e
	}
	e.msg = o.Message
	if o.Type != "" {
		if e.msg == "" {
			e.msg = o.Type
		} else {
			e.msg = o.Type + ": " + e.msg
		}
	}
	e.status = errorTypeStatus(o.Type)
	return e
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }
