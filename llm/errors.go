package llm

import (
	"errors"
	"fmt"
	"net/http"
	"time"
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
)

// APIError is a failed call to a provider's API.
type APIError struct {
	Provider   string        // "gemini", "openai", …
	Status     int           // HTTP status; 0 when no response arrived
	Message    string        // the provider's message, without secrets
	KeyEnv     string        // the variable the key came from, for 401/403 messages
	RetryAfter time.Duration // what the provider asked for, if anything
	Err        error         // the underlying error, if any
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	switch {
	case (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden) && e.KeyEnv != "":
		return fmt.Sprintf("%s: %s was rejected (%d): %s", e.Provider, e.KeyEnv, e.Status, msg)
	case e.Status != 0:
		return fmt.Sprintf("%s: %s (%d): %s", e.Provider, statusText(e.Status), e.Status, msg)
	default:
		return fmt.Sprintf("%s: %s", e.Provider, msg)
	}
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

// statusText names an HTTP status, including the non-standard ones providers
// use (Anthropic's 529 "overloaded").
func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	switch code {
	case 529:
		return "Overloaded"
	case 499:
		return "Client Closed Request"
	}
	return "HTTP error"
}
