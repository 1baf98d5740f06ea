package search

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/internal/httpx"
)

// Defaults of HTTPOptions.
const (
	DefaultMaxRetries = 3
	// DefaultMaxConcurrency is no bound: set HTTPOptions.MaxConcurrency
	// for a provider's rate limit on requests in flight.
	DefaultMaxConcurrency   = 0
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 16 << 20
	// maxRetryAfter caps how long a provider's Retry-After may make one
	// search wait; a longer demand fails the search (and lets a Chain move
	// on) instead of stalling a research run.
	maxRetryAfter = 20 * time.Second
)

// HTTPOptions is the transport behaviour every web provider shares:
// retries with exponential backoff and jitter on 429, 5xx, connection
// resets and timeouts (honouring Retry-After up to 20s), a bound on
// requests in flight for a provider's rate limit (none by default), a
// timeout per search and a cap on the response size. The zero value means
// the defaults.
type HTTPOptions struct {
	// HTTPClient is the base client; its Transport is wrapped with the
	// retries and the concurrency bound. Nil means http.DefaultTransport.
	// Provider base URLs are operator configuration, so these clients are
	// not behind the SSRF guard (a SearXNG on localhost is normal).
	HTTPClient *http.Client
	// MaxRetries is the number of retries after the first attempt; 0 means
	// DefaultMaxRetries, negative means none.
	MaxRetries int
	// MaxConcurrency bounds this provider's requests in flight; more wait
	// their turn. 0 and negative values mean no bound
	// (DefaultMaxConcurrency). Share one provider value among runs that
	// share its quota, and keep the bound at least one research round's
	// queries, or a run waits on its own searches.
	MaxConcurrency int
	// Timeout bounds one Search, retries included; 0 means DefaultTimeout,
	// negative means none.
	Timeout time.Duration
	// RetryBackoff is the first wait between attempts (doubling after);
	// 0 means 500ms.
	RetryBackoff time.Duration
	// MaxResponseBytes caps one response body; 0 means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Logger receives debug and warning records (skipped engines, partial
	// failures); nil discards them.
	Logger *slog.Logger
}

// apiClient is the plumbing of one provider.
type apiClient struct {
	provider string
	client   *http.Client
	timeout  time.Duration
	maxBytes int64
	keyEnv   string // names the key's variable in auth errors
	secret   string // redacted from every message
	logger   *slog.Logger
}

// newAPIClient builds a provider's plumbing. wrap, when not nil, wraps the
// base transport beneath the retries (to translate a provider's rate-limit
// headers into Retry-After, say).
func newAPIClient(provider string, o HTTPOptions, keyEnv, secret string, wrap func(http.RoundTripper) http.RoundTripper) *apiClient {
	var base http.RoundTripper
	client := &http.Client{}
	if o.HTTPClient != nil {
		*client = *o.HTTPClient
		base = o.HTTPClient.Transport
	}
	if base == nil {
		base = http.DefaultTransport
	}
	if wrap != nil {
		base = wrap(base)
	}
	client.Transport = httpx.NewTransport(base, httpx.Policy{
		MaxAttempts:    httpx.Setting(o.MaxRetries, DefaultMaxRetries) + 1,
		InitialBackoff: o.RetryBackoff,
		MaxRetryAfter:  maxRetryAfter,
		Concurrency:    httpx.Setting(o.MaxConcurrency, DefaultMaxConcurrency),
	})
	timeout := DefaultTimeout
	if o.Timeout != 0 {
		timeout = o.Timeout
	}
	maxBytes := int64(DefaultMaxResponseBytes)
	if o.MaxResponseBytes > 0 {
		maxBytes = o.MaxResponseBytes
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &apiClient{provider: provider, client: client, timeout: timeout, maxBytes: maxBytes,
		keyEnv: keyEnv, secret: secret, logger: logger}
}

// withTimeout bounds one search.
func (c *apiClient) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout < 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.timeout)
}

// statusHint turns a failed response into an *APIError; providers use it
// to add advice for statuses they know.
type statusHint func(status int, msg string, body []byte) (int, string)

// do sends req (whose context carries the search's deadline; parent is the
// caller's context) and decodes a 2xx JSON answer into out. Every failure
// is an *APIError, except cancellation of parent, which is returned as is.
func (c *apiClient) do(parent context.Context, req *http.Request, out any, hint statusHint) error {
	resp, err := c.client.Do(req)
	if err != nil {
		return c.transportError(parent, req.Context(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBytes+1))
	if err != nil {
		return c.transportError(parent, req.Context(), err)
	}
	if int64(len(body)) > c.maxBytes {
		return &APIError{Provider: c.provider, Status: resp.StatusCode,
			Message: fmt.Sprintf("response larger than %d bytes (raise MaxResponseBytes)", c.maxBytes)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		status := resp.StatusCode
		msg := errorMessage(body)
		if hint != nil {
			status, msg = hint(status, msg, body)
		}
		e := &APIError{Provider: c.provider, Status: status, Message: redact(msg, c.secret), KeyEnv: c.keyEnv}
		if ra, ok := httpx.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			e.RetryAfter = ra
		}
		return e
	}
	if err := json.Unmarshal(body, out); err != nil {
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		msg := fmt.Sprintf("malformed JSON response: %v", err)
		if mt != "" && !strings.Contains(mt, "json") {
			msg = fmt.Sprintf("expected JSON, got %s (%s)", mt, snippetOf(body))
		}
		return &APIError{Provider: c.provider, Message: redact(msg, c.secret), Err: err}
	}
	return nil
}

func (c *apiClient) transportError(parent, callCtx context.Context, err error) error {
	if parent.Err() != nil {
		return fmt.Errorf("%s: %w", c.provider, parent.Err())
	}
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return &APIError{Provider: c.provider,
			Message: fmt.Sprintf("no complete reply within %s (raise the search timeout)", c.timeout), Err: err}
	}
	return &APIError{Provider: c.provider, Message: redact(err.Error(), c.secret), Err: err}
}

// errorMessage pulls a human message out of an error body: the usual JSON
// shapes ({"detail": …}, {"error": {"detail"|"message": …}}, {"message": …})
// or else the text, shortened.
func errorMessage(body []byte) string {
	var v struct {
		Detail  json.RawMessage `json:"detail"`
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		for _, raw := range []json.RawMessage{v.Detail, v.Error} {
			if m := messageOf(raw); m != "" {
				return m
			}
		}
		if v.Message != "" {
			return v.Message
		}
	}
	return snippetOf(body)
}

// messageOf reads a JSON string, or an object's detail/message/error field.
func messageOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Detail  string `json:"detail"`
		Message string `json:"message"`
		Error   string `json:"error"`
		Code    string `json:"code"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return ""
	}
	m := o.Detail
	if m == "" {
		m = o.Message
	}
	if m == "" {
		m = o.Error
	}
	if o.Code != "" {
		if m == "" {
			return o.Code
		}
		return m + " (" + o.Code + ")"
	}
	return m
}

// snippetOf returns the start of body as one line of text, tags removed.
func snippetOf(body []byte) string {
	text := string(bytes.TrimSpace(body))
	if strings.HasPrefix(text, "<") {
		text = plainText(text)
	}
	text = strings.Join(strings.Fields(text), " ")
	const max = 300
	if len(text) > max {
		cut := max
		for cut > 0 && !utf8RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "…"
	}
	if text == "" {
		return "empty response body"
	}
	return text
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
