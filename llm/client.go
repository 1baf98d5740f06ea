package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/deepgraph/deepgraph/internal/httpx"
)

// Defaults of ClientConfig.
const (
	DefaultMaxRetries     = 3
	DefaultMaxConcurrency = 8
	DefaultTimeout        = 3 * time.Minute
)

// ClientConfig is the transport behaviour every provider shares: retries with
// exponential backoff and jitter on 429, 5xx, connection resets and timeouts
// (honouring Retry-After), a bound on requests in flight so wide fan-outs
// queue instead of storming the provider, and a per-call timeout. The zero
// value means the defaults.
type ClientConfig struct {
	// HTTPClient is the base client; its Transport is wrapped. Nil means
	// http.DefaultTransport.
	HTTPClient *http.Client
	// MaxRetries is the number of retries after the first attempt; 0 means
	// DefaultMaxRetries, negative means none.
	MaxRetries int
	// MaxConcurrency bounds this provider's requests in flight; 0 means
	// DefaultMaxConcurrency, negative means unbounded.
	MaxConcurrency int
	// Timeout bounds one call, retries included; 0 means DefaultTimeout,
	// negative means none.
	Timeout time.Duration
	// RetryBackoff is the first wait between attempts (doubling after);
	// 0 means 500ms.
	RetryBackoff time.Duration
}

// Client returns the HTTP client a provider should use.
func (c ClientConfig) Client() *http.Client {
	var base http.RoundTripper
	out := &http.Client{}
	if c.HTTPClient != nil {
		*out = *c.HTTPClient
		base = c.HTTPClient.Transport
	}
	out.Transport = httpx.NewTransport(base, httpx.Policy{
		MaxAttempts:    httpx.Setting(c.MaxRetries, DefaultMaxRetries) + 1,
		InitialBackoff: c.RetryBackoff,
		Concurrency:    httpx.Setting(c.MaxConcurrency, DefaultMaxConcurrency),
	})
	return out
}

// Call runs fn under the configured timeout. A timeout becomes an *APIError
// of the named provider that matches ErrTimeout; cancellation of ctx itself is
// returned as ctx.Err().
func Call[R any](ctx context.Context, c ClientConfig, provider string, fn func(context.Context) (R, error)) (R, error) {
	d := DefaultTimeout
	if c.Timeout > 0 {
		d = c.Timeout
	}
	callCtx := ctx
	cancel := context.CancelFunc(func() {})
	if c.Timeout >= 0 {
		callCtx, cancel = context.WithTimeout(ctx, d)
	}
	defer cancel()
	r, err := fn(callCtx)
	if err != nil {
		if ctx.Err() != nil {
			var zero R
			return zero, ctx.Err()
		}
		if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
			var zero R
			return zero, &APIError{Provider: provider, Message: fmt.Sprintf("no complete reply within %s (raise the timeout in config)", d), Err: ErrTimeout}
		}
	}
	return r, err
}
