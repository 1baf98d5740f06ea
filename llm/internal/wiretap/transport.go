package wiretap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Call is one Generate call as the Transport sees it; a provider's call
// state implements it.
type Call interface {
	// EditRequest changes the outgoing request, usually its body through
	// EditJSONBody. An error fails the request without sending it.
	EditRequest(req *http.Request) error
	// Observe sees the next transport's result: it records it (see
	// Exchange.Record) and returns what langchaingo reads.
	Observe(resp *http.Response, err error) (*http.Response, error)
}

type callKey struct{}

// WithCall returns ctx carrying c for the Transport. The context goes to
// langchaingo only: it must not reach requests of other calls.
func WithCall(ctx context.Context, c Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// Transport is a provider's http.RoundTripper, between langchaingo and the
// retrying transport of llm.ClientConfig. Every request loses the key header
// when Keyless is set and gets Header's values; a request whose context
// carries a Call (WithCall) is also edited by it, and its result observed.
// Its fields must not change once it is in use.
type Transport struct {
	// Next sends the request.
	Next http.RoundTripper
	// KeyHeader carries the API key: "Authorization" (OpenAI) or
	// "X-Api-Key" (Anthropic). Header cannot set it.
	KeyHeader string
	// Keyless removes KeyHeader, which langchaingo always sets (with a
	// placeholder when there is no key), so keyless servers never see one.
	Keyless bool
	// Header holds extra headers, replacing values of the same name.
	Header http.Header
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c, _ := req.Context().Value(callKey{}).(Call)
	out := req.Clone(req.Context())
	if t.Keyless {
		out.Header.Del(t.KeyHeader)
	}
	for k, vs := range t.Header {
		if strings.EqualFold(k, t.KeyHeader) {
			continue
		}
		out.Header.Del(k)
		for _, v := range vs {
			out.Header.Add(k, v)
		}
	}
	if c == nil {
		return t.Next.RoundTrip(out)
	}
	if err := c.EditRequest(out); err != nil {
		return nil, err
	}
	resp, err := t.Next.RoundTrip(out)
	return c.Observe(resp, err)
}

// errNotObject is a request body that is JSON but not an object.
var errNotObject = errors.New("the request body is not a JSON object")

// EditJSONBody decodes req's body as a JSON object, lets edit change its
// members, and puts the re-encoded body back (with GetBody, for retries, and
// ContentLength). A request without a body is left alone.
func EditJSONBody(req *http.Request, edit func(body map[string]json.RawMessage) error) error {
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
	if body == nil {
		return fmt.Errorf("editing the request body: %w", errNotObject)
	}
	if err := edit(body); err != nil {
		return fmt.Errorf("editing the request body: %w", err)
	}
	if data, err = json.Marshal(body); err != nil {
		return fmt.Errorf("editing the request body: %w", err)
	}
	req.Body = io.NopCloser(bytes.NewReader(data))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	req.ContentLength = int64(len(data))
	return nil
}
