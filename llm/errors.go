package llm

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/deepgraph/deepgraph/internal/httpx"
)

// Conditions callers branch on. Errors from providers match them with
// errors.Is.
var (
	ErrRateLimited = errors.New("rate limited")          // 429, after retries
	ErrAuth        = errors.New("authentication failed") // 401, 403
	ErrBadRequest  = errors.New("bad request")           // 400, 404, 422
	ErrUnavailable = errors.New("provider unavailable")  // 5xx, connection failures, after retries
	ErrTimeout     = errors.New("timed out")             // the per-call timeout expired
	ErrUnsupported = errors.New("not supported by this provider")
	ErrNoModel     = errors.New("no model configured")
	// ErrStreamBroken: a streamed reply ended before the provider's final
	// event (connection cut, truncated body, missing finish) after a 200.
	ErrStreamBroken = errors.New("stream ended before the reply was complete")
)

// IsTransient reports whether err is a model error that may well not happen
// again: rate limited (ErrRateLimited), the provider unavailable
// (ErrUnavailable: 5xx, connection failures), a stream cut off
// (ErrStreamBroken), or one call's own timeout (ErrTimeout). It is false for
// nil, a rejected key (ErrAuth), a refused request (ErrBadRequest),
// ErrUnsupported, ErrNoModel, and the caller's cancellation or deadline
// (context.Canceled, context.DeadlineExceeded) — trying again cannot help
// those. Graph nodes use it as their retry condition:
//
//	graph.WithRetry(graph.RetryPolicy{RetryOn: llm.IsTransient})
func IsTransient(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, ErrAuth), errors.Is(err, ErrBadRequest),
		errors.Is(err, ErrUnsupported), errors.Is(err, ErrNoModel):
		return false
	}
	return errors.Is(err, ErrRateLimited) || errors.Is(err, ErrUnavailable) ||
		errors.Is(err, ErrStreamBroken) || errors.Is(err, ErrTimeout)
}

// IsFinal reports whether err is the error of a model call that its
// client's one retry loop (CallModel, with retries on) has already retried
// as far as its budget allows — attempts, Retry-After, the per-call timeout
// — or found not worth retrying. Sending the call again from a layer above
// (a graph node's retry policy) would multiply the call's sends: retry
// policies of nodes that call a model retry only errors that are transient
// and not final (nodes.ModelRetry does this). Errors of models whose client
// does not retry (retries off, fakes, your own Model) are never final.
func IsFinal(err error) bool {
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.final {
		return true
	}
	var f *finalError
	return errors.As(err, &f)
}

// APIError is a failed call to a provider's API.
type APIError struct {
	Provider   string        // "gemini", "openai", …
	Status     int           // HTTP status; 0 when no response arrived
	Message    string        // the provider's message, without secrets
	KeyEnv     string        // the variable the key came from, for 401/403 messages
	RetryAfter time.Duration // what the provider asked for, if anything
	Err        error         // the underlying error, if any
	// Usage is what the provider reported of the failed call's tokens (a
	// stream cut off after its first events), so accounting can count them;
	// zero when it reported none.
	Usage Usage
	// Attempts is how many times CallModel sent the call, retries
	// included; 0 when the error did not come from CallModel's retry loop.
	Attempts int

	final bool // CallModel spent the call's retry budget (IsFinal)
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return httpx.ErrorText(e.Provider, e.KeyEnv, e.Status, msg)
}

func (e *APIError) Unwrap() error { return e.Err }

// Is matches the sentinel errors by status.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrRateLimited:
		return e.Status == http.StatusTooManyRequests
	case ErrAuth:
		return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
	case ErrBadRequest:
		return e.Status == http.StatusBadRequest || e.Status == http.StatusNotFound || e.Status == http.StatusUnprocessableEntity
	case ErrUnavailable:
		return e.Status >= 500 || e.Status == 0 && e.Err != nil && !errors.Is(e.Err, ErrTimeout) && !errors.Is(e.Err, ErrUnsupported)
	}
	return false
}
