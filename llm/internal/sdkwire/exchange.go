package sdkwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/internal/httpx"
	"github.com/deepgraph/deepgraph/llm"
)

// MaxErrorBody bounds the body of an error reply that is kept.
const MaxErrorBody = 1 << 20

// StatusError is a reply with an error status (4xx, 5xx), as Middleware
// hands it to the SDK in place of the response.
type StatusError struct {
	Status int
	Header http.Header
	Body   []byte // at most MaxErrorBody bytes
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP status %d", e.Status) }

// TransportError is a round trip that got no response.
type TransportError struct{ Err error }

func (e *TransportError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *TransportError) Unwrap() error { return e.Err }

// Headers is what Middleware does to every request.
type Headers struct {
	// KeyHeader carries the API key: "Authorization" (OpenAI) or
	// "X-Api-Key" (Anthropic). Extra cannot set it.
	KeyHeader string
	// Keyless removes KeyHeader, so a server called without a key never
	// sees one (not even one an SDK read from its environment).
	Keyless bool
	// Extra holds extra headers, replacing values of the same name.
	Extra http.Header
}

// Middleware is the request middleware of a provider's SDK client (both SDKs
// take this signature): it applies h, sends the request, and returns a reply
// with an error status as a *StatusError and a failed round trip as a
// *TransportError. The caller's cancellation is returned as it is.
func Middleware(h Headers) func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		if h.Keyless {
			req.Header.Del(h.KeyHeader)
		}
		for k, vs := range h.Extra {
			if strings.EqualFold(k, h.KeyHeader) {
				continue
			}
			req.Header.Del(k)
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
		resp, err := next(req)
		if err != nil {
			if ctxErr := req.Context().Err(); ctxErr != nil {
				return nil, ctxErr
			}
			return nil, &TransportError{Err: err}
		}
		if resp.StatusCode < 400 {
			return resp, nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
		resp.Body.Close()
		return nil, &StatusError{Status: resp.StatusCode, Header: resp.Header, Body: body}
	}
}

// Source names the provider and its key in errors.
type Source struct {
	// Provider is the name errors start with ("openai", "ollama", …).
	Provider string
	// APIKey is masked wherever it appears; "" means no key was sent.
	APIKey string
	// KeyEnv names where the key came from, for 401/403 messages.
	KeyEnv string
	// EnvAPIKey is the variable suggested when a keyless call is refused.
	EnvAPIKey string
	// Decode reads the API's error objects.
	Decode DecodeError
}

// Failure is the error Generate returns for err, a failed call: the
// caller's context error when ctx has ended (that explains a failure better
// than anything else), else an *llm.APIError — for a *StatusError the status
// with the server's message (a keyless call refused with 401 or 403 says
// which variable takes the key) and Retry-After; for a *TransportError "cannot
// reach the server"; for a *ReplyError the status it names; anything else is
// a reply the SDK could not read (ErrMalformed). Every text is cleaned.
func (s Source) Failure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var (
		se *StatusError
		te *TransportError
		re *ReplyError
		ae *llm.APIError
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &se):
		msg := Clean(ErrorMessage(se.Body, s.Decode), s.APIKey)
		if msg == "" {
			msg = "no details in the reply"
		}
		if s.APIKey == "" && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden) {
			msg += fmt.Sprintf(" (no API key was sent: set the API key in the config, or %s)", s.EnvAPIKey)
		}
		e := &llm.APIError{Provider: s.Provider, Status: se.Status, Message: msg, KeyEnv: s.KeyEnv}
		if d, ok := httpx.ParseRetryAfter(se.Header.Get("Retry-After"), time.Now()); ok {
			e.RetryAfter = d
		}
		return e
	case errors.As(err, &te):
		return &llm.APIError{Provider: s.Provider, Message: "cannot reach the server: " + Clean(te.Err.Error(), s.APIKey), Err: te.Err}
	case errors.As(err, &re):
		e := &llm.APIError{Provider: s.Provider, Status: re.Status, Message: Clean(re.Error(), s.APIKey), Err: re, KeyEnv: s.KeyEnv}
		if e.Message == "" {
			e.Message = "the server reported an error without a message"
		}
		return e
	}
	return &llm.APIError{Provider: s.Provider, Message: "malformed reply: " + Clean(err.Error(), s.APIKey),
		Err: fmt.Errorf("%w: %w", ErrMalformed, err)}
}

// NotStream is the error of a JSON reply (a 200 whose Content-Type is not an
// event stream) to a request for a stream, with the server's message if it
// sent one. It is not retried: the server ignores the request for a stream.
func NotStream(resp *http.Response, decode DecodeError) *ReplyError {
	ct := resp.Header.Get("Content-Type")
	msg := "asked for an event stream but the server replied with " + ct
	if resp.Body != nil {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
		if m := ErrorMessage(body, decode); m != "" {
			msg += ": " + m
		}
	}
	return &ReplyError{Msg: msg, Err: ErrNotStream}
}

// IsEventStream reports whether resp carries an event stream, judged by
// its Content-Type: anything but JSON is read as one (some servers send
// text/plain or none).
func IsEventStream(resp *http.Response) bool {
	return resp == nil || !strings.Contains(resp.Header.Get("Content-Type"), "json")
}

// LineEnded wraps an event-stream body so that a body ending inside a line
// (its last byte not a newline) ends with io.ErrUnexpectedEOF instead of
// io.EOF: an SSE decoder drops such a partial event silently, but the reply
// was cut off inside it.
func LineEnded(rc io.ReadCloser) io.ReadCloser { return &lineEnded{ReadCloser: rc, last: '\n'} }

type lineEnded struct {
	io.ReadCloser
	last byte
}

func (r *lineEnded) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if n > 0 {
		r.last = p[n-1]
	}
	if err == io.EOF && r.last != '\n' {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
