package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/deepgraph/deepgraph/internal/httpx"
)

// Defaults of ClientConfig.
const (
	DefaultMaxRetries = 3
	// DefaultMaxConcurrency is no bound: a client does not pace the calls
	// of the runs that use it. Set MaxConcurrency for a provider's rate
	// limit on requests in flight.
	DefaultMaxConcurrency = 0
	DefaultTimeout        = 3 * time.Minute
)

// ClientConfig is the transport behaviour every provider shares: retries with
// exponential backoff and jitter on 429, 5xx, connection resets and timeouts
// and streams cut off (honouring Retry-After), an optional bound on requests
// in flight for a provider's rate limit, and a per-call timeout. The zero
// value means the defaults.
//
// There is one retry loop, CallModel's, and one retry budget per call:
// MaxRetries retries whatever failed — a status, a dropped connection, a
// stream cut after its 200 — within Timeout. The HTTP client (Client) does
// not retry, nor do the vendors' SDKs, and the errors CallModel returns are
// marked final (IsFinal) so that a graph node's retry policy does not send
// the call again (nodes.ModelRetry).
type ClientConfig struct {
	// HTTPClient is the base client; its Transport is wrapped. Nil means
	// http.DefaultTransport.
	HTTPClient *http.Client
	// MaxRetries is the number of retries after the first attempt; 0 means
	// DefaultMaxRetries, negative means none.
	MaxRetries int
	// MaxConcurrency bounds this client's requests in flight (a streamed
	// reply holds its slot until it ends); more wait their turn. 0 and
	// negative values mean no bound (DefaultMaxConcurrency). A bound meant
	// for a provider's quota belongs on the one client every run of the
	// process shares, and should be at least the fan-out of one research
	// round (its queries), or a run waits on its own calls.
	MaxConcurrency int
	// Timeout bounds one call, retries included; 0 means DefaultTimeout,
	// negative means none.
	Timeout time.Duration
	// RetryBackoff is the first wait between attempts (doubling after);
	// 0 means 500ms.
	RetryBackoff time.Duration
}

// Client returns the HTTP client a provider should use: the concurrency
// bound, and no retries (CallModel's loop is the one retry loop).
func (c ClientConfig) Client() *http.Client {
	var base http.RoundTripper
	out := &http.Client{}
	if c.HTTPClient != nil {
		*out = *c.HTTPClient
		base = c.HTTPClient.Transport
	}
	out.Transport = httpx.NewTransport(base, httpx.Policy{
		MaxAttempts: 1,
		Concurrency: httpx.Setting(c.MaxConcurrency, DefaultMaxConcurrency),
	})
	return out
}

// policy is CallModel's backoff.
func (c ClientConfig) policy() httpx.Policy {
	return httpx.Policy{InitialBackoff: c.RetryBackoff}
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

// CallModel runs a provider's model call with the resilience every provider
// shares: Call's per-call timeout (retries included), and the one retry loop
// of model calls. It retries an attempt that failed with a retryable status
// (408, 429, 5xx but 501 and 505, Anthropic's 529), a connection dropped,
// reset or refused before the reply, or a reply whose stream broke off after
// its 200 (ErrStreamBroken) — at most c.MaxRetries times (0 means
// DefaultMaxRetries, negative none), with exponential backoff and jitter, or
// the provider's Retry-After when longer. It stops at once when ctx ends,
// when the provider asks to wait over a minute, or when the wait would
// outlast the call's deadline; other errors are returned at once.
//
// Every *APIError it returns is marked final (IsFinal) with the number of
// attempts (APIError.Attempts): the call had its budget, and a retry above
// it — a graph node's retry policy — would multiply the sends. With retries
// off (negative MaxRetries) the error is not marked: the caller's own
// retries are then the only ones.
//
// attempt sends the call once. It must deliver its deltas to the onDelta it
// is given — nil when the caller did not stream (onDelta, from
// Request.OnDelta, was nil) — and never to the request's own OnDelta. When a
// broken attempt had delivered deltas, the caller's onDelta receives
// Delta{Restart: true} before the next attempt's first delta, so observers
// discard the partial text; a delta an abandoned attempt sends late is
// dropped. Tokens a failed attempt reported (APIError.Usage) are added to the
// final Response's Usage, or to the final error's.
//
// When every attempt broke off mid-stream, the last attempt's *APIError is
// returned with its message saying how many attempts were cut off.
func CallModel(ctx context.Context, c ClientConfig, provider string, onDelta func(Delta),
	attempt func(ctx context.Context, onDelta func(Delta)) (*Response, error)) (*Response, error) {
	retries := httpx.Setting(c.MaxRetries, DefaultMaxRetries)
	policy := c.policy()
	n := 0
	resp, err := Call(ctx, c, provider, func(ctx context.Context) (*Response, error) {
		var spent Usage // reported by failed attempts
		restart := false
		for {
			n++
			if restart {
				onDelta(Delta{Restart: true})
			}
			g := &deltaGate{f: onDelta}
			resp, err := attempt(ctx, g.callback())
			restart = g.close()
			if err == nil {
				if resp != nil {
					resp.Usage = resp.Usage.Add(spent)
				}
				return resp, nil
			}
			var apiErr *APIError
			if errors.As(err, &apiErr) {
				spent = spent.Add(apiErr.Usage)
			}
			if ctx.Err() != nil || !retryable(err) {
				return nil, withUsage(err, spent)
			}
			if n > retries {
				if errors.Is(err, ErrStreamBroken) {
					return nil, brokenEverywhere(provider, err, n, spent)
				}
				return nil, withUsage(err, spent)
			}
			var after time.Duration
			if apiErr != nil {
				after = apiErr.RetryAfter
			}
			if werr := policy.WaitAfter(ctx, n, after); werr != nil {
				return nil, withUsage(err, spent)
			}
		}
	})
	if err != nil && retries > 0 {
		return nil, markFinal(err, n)
	}
	return resp, err
}

// retryable reports whether a failed attempt is worth another: a stream
// cut off, a retryable status, or a round trip that got no reply for a
// reason that may pass (a dropped or refused connection, a network timeout).
func retryable(err error) bool {
	if errors.Is(err, ErrStreamBroken) {
		return true
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	if apiErr.Status != 0 {
		return httpx.RetryableStatus(apiErr.Status)
	}
	return apiErr.Err != nil && httpx.RetryableError(apiErr.Err)
}

// withUsage gives an *APIError the usage of every failed attempt; another
// error is returned as it is.
func withUsage(err error, spent Usage) error {
	apiErr, ok := err.(*APIError)
	if !ok || spent == (Usage{}) {
		return err
	}
	out := *apiErr
	out.Usage = spent
	return &out
}

// markFinal marks the error of a call CallModel retried as far as its
// budget allowed (see IsFinal): an *APIError gets Attempts and the mark,
// another error is wrapped. The caller's cancellation is returned as it is.
func markFinal(err error, attempts int) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if apiErr, ok := err.(*APIError); ok {
		out := *apiErr
		out.Attempts, out.final = attempts, true
		return &out
	}
	return &finalError{err: err}
}

// finalError marks an error that is not an *APIError as final.
type finalError struct{ err error }

func (e *finalError) Error() string { return e.err.Error() }
func (e *finalError) Unwrap() error { return e.err }

// brokenEverywhere is the error of a call whose every attempt broke off.
func brokenEverywhere(provider string, err error, attempts int, spent Usage) error {
	hint := fmt.Sprintf("it was cut off on all %d attempts: something between here and %s (a proxy, a load balancer, an unstable network) may be dropping long responses; check it, or raise the number of retries in config", attempts, provider)
	if attempts == 1 {
		hint = "retries are off (raise them in config)"
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		return &APIError{Provider: provider, Message: err.Error() + "; " + hint, Err: err, Usage: spent}
	}
	out := *apiErr
	msg := out.Message
	if msg == "" && out.Err != nil {
		msg = out.Err.Error()
	}
	out.Message = msg + "; " + hint
	out.Usage = spent
	return &out
}

// deltaGate passes one attempt's deltas on until the attempt is over, and
// remembers whether it passed any.
type deltaGate struct {
	f      func(Delta)
	mu     sync.Mutex
	sent   bool
	closed bool
}

// callback is what the attempt streams to: nil when the caller did not ask
// for deltas.
func (g *deltaGate) callback() func(Delta) {
	if g.f == nil {
		return nil
	}
	return func(d Delta) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.closed {
			return
		}
		g.sent = true
		g.f(d)
	}
}

// close ends the attempt and says whether any delta was passed on.
func (g *deltaGate) close() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	return g.sent
}
