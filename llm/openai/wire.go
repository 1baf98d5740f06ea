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
//   - edits the JSON body langchaingo built: the per-call json_schema
//     response_format (langchaingo only has a per-client one, with a schema
//     type too narrow for anyOf, min/max, $defs, …), removal of the
//     temperature it always sends, removal of stream_options;
//   - records the final status, Retry-After and error body, which
//     langchaingo folds into a string;
//   - reads what langchaingo drops from replies (the model name, the
//     "reasoning" field some servers use instead of "reasoning_content") and
//     watches event streams: it hands out deltas, assembles tool calls by
//     index, and turns a stream that stops before its end marker, or carries
//     an error object, into a read error instead of a silently partial reply.
//
// It also removes the Authorization header for keyless servers and adds the
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
		out.Header.Del("Authorization")
	}
	for k, vs := range w.header {
		if strings.EqualFold(k, "Authorization") {
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
	responseFormat    json.RawMessage // replaces response_format when set
	dropTemperature   bool
	dropStreamOptions bool
	stream            bool
	onDelta           func(llm.Delta)
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
	model        string
	reasoning    string // non-streamed "reasoning" field
	replyErr     error  // a reply that is not a usable answer despite status 200
	stream       streamState
}

func newCall(spec callSpec) *call {
	return &call{spec: spec, stream: streamState{byIndex: map[int]*toolCallBuilder{}}}
}

func (c *call) editBody(req *http.Request) error {
	c.mu.Lock()
	c.sent = true
	c.mu.Unlock()
	s := c.spec
	if req.Body == nil || (s.responseFormat == nil && !s.dropTemperature && !s.dropStreamOptions) {
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
	if s.responseFormat != nil {
		body["response_format"] = s.responseFormat
	}
	if s.dropTemperature {
		delete(body, "temperature")
	}
	if s.dropStreamOptions {
		delete(body, "stream_options")
	}
	if data, err = json.Marshal(body); err != nil {
		return fmt.Errorf("editing the request body: %w", err)
	}
	req.Body = io.NopCloser(bytes.NewReader(data))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	req.ContentLength = int64(len(data))
	return nil
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
			// The server ignored "stream": true.
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
	} else if e := errorObject(r.Error); e != nil {
		c.replyErr = e
	}
}

// replyError is a reply that cannot be used although the HTTP status was 200:
// an error object in the body or stream, a stream cut short, a body that does
// not parse. status is the HTTP status the error object names, if any.
type replyError struct {
	status int
	msg    string
	err    error
}

func (e *replyError) Error() string { return e.msg }
func (e *replyError) Unwrap() error { return e.err }

var (
	errTruncated   = fmt.Errorf("event stream ended before its end marker: %w", io.ErrUnexpectedEOF)
	errStreamError = errors.New("error event in the reply")
	errNotStream   = errors.New("reply is not an event stream")
)

// errorObject reads an "error" member as OpenAI and compatible servers send
// it: {"message", "type", "code"} or a plain string. It returns nil for an
// absent or null member.
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
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &o) != nil {
		e.msg = string(raw)
		return e
	}
	e.msg = o.Message
	if e.msg == "" {
		e.msg = o.Type
	}
	var code int
	if json.Unmarshal(o.Code, &code) == nil && code >= 400 && code <= 599 {
		e.status = code
	}
	return e
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }
