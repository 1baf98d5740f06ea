package wiretap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/internal/httpx"
	"github.com/deepgraph/deepgraph/llm"
)

// Exchange is what the transport saw of one call's HTTP exchange, for the
// error Generate reports: langchaingo reduces statuses to strings and hides
// network errors. A provider's call state embeds it; its fields are guarded
// by that call's lock, which Record and Failure expect held.
type Exchange struct {
	// Sent is set once the request reached the transport; a langchaingo
	// error before that is about building the request.
	Sent bool
	// TransportErr is the error of the last attempt that got no response.
	TransportErr error
	// Status is the final HTTP status.
	Status int
	// RetryAfter is what the server asked for, if anything.
	RetryAfter time.Duration
	// ErrBody is the body of a non-200 reply, at most MaxErrorBody bytes.
	ErrBody []byte
	// ReplyErr is set when a 200 reply is not a usable answer (usually a
	// *ReplyError).
	ReplyErr error
}

// Reply is how a provider reads a 200 reply.
type Reply struct {
	// Stream says an event stream was asked for.
	Stream bool
	// Inspect reads a whole non-streamed reply, with the call's lock held;
	// it may set ReplyErr.
	Inspect func(body []byte)
	// Line and End read an event stream, as NewLineTap describes; they run
	// on the reader's goroutine without the lock.
	Line func(line []byte) (keep bool, err error)
	End  func(readErr error) error
	// Decode reads the API's error objects.
	Decode DecodeError
}

// Record notes the next transport's result and returns what langchaingo
// should read:
//
//   - a transport error is kept and returned;
//   - a non-200 reply's status, Retry-After and body (bounded) are kept,
//     and the body is handed on;
//   - a streamed 200 reply is read through a LineTap; a JSON reply where an
//     event stream was asked for becomes a ReplyError wrapping ErrNotStream
//     (with the server's message, if any);
//   - a non-streamed 200 reply is read whole (at most MaxReplyBody bytes),
//     shown to Inspect and handed on.
//
// A reply that cannot be read becomes ReplyErr, and langchaingo's read of the
// body fails with it.
func (x *Exchange) Record(resp *http.Response, err error, r Reply) (*http.Response, error) {
	if err != nil {
		x.TransportErr = err
		return nil, err
	}
	x.Status = resp.StatusCode
	if d, ok := httpx.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
		x.RetryAfter = d
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
		resp.Body.Close()
		x.ErrBody = body
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	if r.Stream {
		if ct := resp.Header.Get("Content-Type"); strings.Contains(ct, "json") {
			// The server ignored the request for a stream.
			body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
			resp.Body.Close()
			msg := "asked for an event stream but the server replied with " + ct
			if m := ErrorMessage(body, r.Decode); m != "" {
				msg += ": " + m
			}
			x.ReplyErr = &ReplyError{Msg: msg, Err: ErrNotStream}
			resp.Body = io.NopCloser(failingReader{x.ReplyErr})
			return resp, nil
		}
		resp.Body = NewLineTap(resp.Body, r.Line, r.End)
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxReplyBody+1))
	resp.Body.Close()
	switch {
	case err != nil:
		x.ReplyErr = &ReplyError{Msg: "reading the reply: " + err.Error(), Err: err}
	case len(body) > MaxReplyBody:
		x.ReplyErr = &ReplyError{Msg: fmt.Sprintf("the reply is larger than %d MiB", MaxReplyBody>>20), Err: ErrMalformed}
	}
	if x.ReplyErr != nil {
		resp.Body = io.NopCloser(failingReader{x.ReplyErr})
		return resp, nil
	}
	r.Inspect(body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
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

// Failure explains a failed call from what the exchange recorded, as the
// *llm.APIError Generate returns: a transport error (no response), a
// non-200 status with the server's message (a keyless call refused with 401
// or 403 says which variable takes the key), or a ReplyError with the
// status it names. Before the request was sent, err is about building it
// and is wrapped with its text cleaned.
// Failure returns nil when the exchange explains nothing: err is then
// langchaingo's reading of a reply the transport passed as fine. The caller
// checks its context first, which explains a failure better than any of
// these.
func (x *Exchange) Failure(err error, s Source) error {
	switch {
	case x.TransportErr != nil:
		return &llm.APIError{Provider: s.Provider, Message: "cannot reach the server: " + Clean(x.TransportErr.Error(), s.APIKey), Err: x.TransportErr}
	case x.Status != 0 && x.Status != http.StatusOK:
		msg := Clean(ErrorMessage(x.ErrBody, s.Decode), s.APIKey)
		if msg == "" {
			msg = "no details in the reply"
		}
		if s.APIKey == "" && (x.Status == http.StatusUnauthorized || x.Status == http.StatusForbidden) {
			msg += fmt.Sprintf(" (no API key was sent: set the API key in the config, or %s)", s.EnvAPIKey)
		}
		return &llm.APIError{Provider: s.Provider, Status: x.Status, Message: msg, KeyEnv: s.KeyEnv, RetryAfter: x.RetryAfter}
	case x.ReplyErr != nil:
		e := &llm.APIError{Provider: s.Provider, Message: Clean(x.ReplyErr.Error(), s.APIKey), Err: x.ReplyErr, KeyEnv: s.KeyEnv}
		var re *ReplyError
		if errors.As(x.ReplyErr, &re) {
			e.Status = re.Status
			if e.Message == "" {
				e.Message = "the server reported an error without a message"
			}
		}
		return e
	case !x.Sent:
		return &cleanError{msg: s.Provider + ": building the request: " + Clean(err.Error(), s.APIKey), err: err}
	}
	return nil
}

// cleanError shows cleaned text for an error it wraps.
type cleanError struct {
	msg string
	err error
}

func (e *cleanError) Error() string { return e.msg }
func (e *cleanError) Unwrap() error { return e.err }

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }
