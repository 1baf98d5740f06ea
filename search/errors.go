package search

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/internal/httpx"
)

// Conditions callers branch on. Errors from this package match them with
// errors.Is.
var (
	ErrRateLimited = errors.New("rate limited")          // 429, after retries
	ErrAuth        = errors.New("authentication failed") // 401, 403 (or a provider's equivalent)
	ErrBadRequest  = errors.New("bad request")           // 400, 404, 422
	ErrUnavailable = errors.New("provider unavailable")  // 5xx, connection failures, timeouts, failed engines
	// ErrNotConfigured: a provider lacks its URL or key (see the FromEnv
	// constructors), or a Chain has no providers.
	ErrNotConfigured = errors.New("search provider not configured")
	// ErrUnsupportedContent: the Reader fetched something it cannot turn
	// into text (images, archives, PDF, other binaries).
	ErrUnsupportedContent = errors.New("unsupported content type")
	// ErrCompressionBomb: a compressed response expanded beyond
	// ReaderConfig.MaxCompressionRatio.
	ErrCompressionBomb = errors.New("response expands suspiciously far when decompressed")
)

// APIError is a failed call to a search provider's API. It never contains
// the API key.
type APIError struct {
	Provider string // "searxng", "tavily", "brave"
	// Status is the HTTP status; 0 when no usable response arrived. A
	// provider's own code for the same condition is mapped onto it (Brave's
	// 422 SUBSCRIPTION_TOKEN_INVALID is reported as 401).
	Status     int
	Message    string        // what went wrong, with the provider's message; no secrets
	KeyEnv     string        // the variable the key comes from, for auth failures
	RetryAfter time.Duration // what the provider asked for, if anything
	Err        error         // the underlying error, if any
}

// Error names the provider, the status and the provider's message; for
// rejected keys it names the variable the key comes from.
func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return httpx.ErrorText(e.Provider, e.KeyEnv, e.Status, msg)
}

// Unwrap returns the underlying error.
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
		return e.Status >= 500 || e.Status == 0 && e.Err != nil
	}
	return false
}

// StatusError is a page the Reader fetched that answered with a non-2xx
// status.
type StatusError struct {
	URL    string // the URL that answered (after redirects)
	Status int
}

// Error names the URL and the status.
func (e *StatusError) Error() string {
	return fmt.Sprintf("search: fetching %s: %d %s", e.URL, e.Status, http.StatusText(e.Status))
}

// ChainError is returned by a Chain when every provider failed. It holds
// one error per provider tried, in order; each names its provider.
type ChainError struct {
	Errors []error
}

// Error lists every provider's failure in order.
func (e *ChainError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, err := range e.Errors {
		parts[i] = err.Error()
	}
	return fmt.Sprintf("search: all %d providers failed: %s", len(e.Errors), strings.Join(parts, "; "))
}

// Unwrap exposes every provider's error to errors.Is and errors.As.
func (e *ChainError) Unwrap() []error { return e.Errors }

// redact replaces every occurrence of secret in s; a provider's message
// must never echo a key back to the user.
func redact(s, secret string) string {
	if len(secret) < 4 {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}
