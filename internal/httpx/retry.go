// Package httpx holds the HTTP plumbing that every provider client shares: a
// RoundTripper that retries rate limits, server errors and dropped connections
// with exponential backoff and jitter (honouring Retry-After), and optionally
// bounds the number of requests in flight (Policy.Concurrency) so the calls
// of many runs sharing a provider's quota queue instead of storming it. The
// bound is the caller's to size: the clients of this project leave it off by
// default, and one set for a rate limit should be no smaller than one run's
// fan-out, or a run waits on itself.
package httpx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Policy configures a Transport. The zero value means the defaults below.
type Policy struct {
	MaxAttempts    int           // total tries per request; default 4
	InitialBackoff time.Duration // first wait; default 500ms
	MaxBackoff     time.Duration // cap on one computed wait; default 20s
	Multiplier     float64       // growth per attempt; default 2
	// MaxRetryAfter caps how long a Retry-After header may make us wait;
	// a longer demand ends the retries and returns the response. Default 60s.
	MaxRetryAfter time.Duration
	// Concurrency bounds requests in flight (a streamed response holds its
	// slot until its body is closed); 0 means unbounded.
	Concurrency int
	// Sleep waits between attempts; tests replace it. Default: a timer that
	// stops when ctx is done.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (p Policy) withDefaults() Policy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.InitialBackoff <= 0 {
		p.InitialBackoff = 500 * time.Millisecond
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = 20 * time.Second
	}
	if p.Multiplier < 1 {
		p.Multiplier = 2
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 60 * time.Second
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	return p
}

// Transport is an http.RoundTripper with retries and a concurrency bound.
type Transport struct {
	base   http.RoundTripper
	policy Policy
	slots  chan struct{} // nil when unbounded
}

// NewTransport wraps base (http.DefaultTransport when nil).
func NewTransport(base http.RoundTripper, p Policy) *Transport {
	if base == nil {
		base = http.DefaultTransport
	}
	t := &Transport{base: base, policy: p.withDefaults()}
	if p.Concurrency > 0 {
		t.slots = make(chan struct{}, p.Concurrency)
	}
	return t
}

// Client returns an *http.Client using t.
func (t *Transport) Client() *http.Client { return &http.Client{Transport: t} }

// RoundTrip sends req, retrying what is worth retrying. After the last
// attempt it returns the last response (so the caller sees the provider's
// status and message) or the last error. The caller's req is never modified:
// a body that cannot be rewound is buffered into a clone.
//
// Bodies are replayed on every retry, so a POST may reach the server more
// than once when a connection drops after the request was sent; every API
// this project calls treats such repeats as harmless.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	req, getBody, err := replayable(req)
	if err != nil {
		return nil, err
	}
	p := t.policy
	for attempt := 1; ; attempt++ {
		if attempt > 1 && getBody != nil {
			body, err := getBody()
			if err != nil {
				return nil, fmt.Errorf("httpx: rewinding the request body for a retry: %w", err)
			}
			req = req.Clone(ctx)
			req.Body = body
		}
		if err := t.acquire(ctx); err != nil {
			return nil, err
		}
		resp, err := t.base.RoundTrip(req)
		last := attempt >= p.MaxAttempts
		if err != nil {
			t.release()
			if last || ctx.Err() != nil || !retryableError(err) {
				return nil, err
			}
			if serr := p.Sleep(ctx, backoff(p, attempt)); serr != nil {
				return nil, fmt.Errorf("%w (while waiting to retry after: %v)", serr, err)
			}
			continue
		}
		if !RetryableStatus(resp.StatusCode) || last {
			resp.Body = t.releaseOnClose(resp.Body)
			return resp, nil
		}
		wait := backoff(p, attempt)
		if ra, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			if ra > p.MaxRetryAfter {
				resp.Body = t.releaseOnClose(resp.Body)
				return resp, nil
			}
			wait = max(wait, ra)
		}
		status := resp.Status
		drain(resp.Body)
		t.release()
		if err := p.Sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("%w (while waiting to retry after %s)", err, status)
		}
	}
}

// RetryableStatus reports whether a response with this status is worth
// another try: 408, 429 and 5xx except 501 and 505.
func RetryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests:
		return true
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
		return false
	}
	return code >= 500 && code <= 599
}

// ParseRetryAfter reads a Retry-After header: delay-seconds or an HTTP-date.
// Fractional seconds are accepted (some APIs send them); negative, NaN and
// infinite values are not. Absurdly large delays saturate instead of
// overflowing, so callers comparing against a cap still see "too long".
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 || math.IsNaN(secs) || math.IsInf(secs, 0) {
			return 0, false
		}
		if secs >= float64(math.MaxInt64)/float64(time.Second) {
			return time.Duration(math.MaxInt64), true
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// RetryableError reports whether a failed round trip (no response) is worth
// another try: a dropped, reset or refused connection, or a network timeout
// — not the caller's cancellation or deadline.
func RetryableError(err error) bool { return retryableError(err) }

// WaitAfter pauses before retry number attempt (1 for the first retry) for
// the policy's backoff with jitter, or retryAfter when that is longer, as the
// Transport does between attempts. It returns an error without waiting
// when retryAfter is over MaxRetryAfter (the server asks for longer than
// retrying is worth) or when ctx's deadline comes before the wait would
// end, and ctx's error if ctx ends first. Callers that retry a whole call
// (the model clients' one retry loop) use it so every level backs off alike.
func (p Policy) WaitAfter(ctx context.Context, attempt int, retryAfter time.Duration) error {
	p = p.withDefaults()
	if retryAfter > p.MaxRetryAfter {
		return fmt.Errorf("the server asks to wait %s, over the %s retrying waits at most", retryAfter.Round(time.Second), p.MaxRetryAfter)
	}
	wait := max(backoff(p, attempt), retryAfter)
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		return fmt.Errorf("the wait before the next attempt (%s) would outlast the call's deadline", wait.Round(time.Millisecond))
	}
	return p.Sleep(ctx, wait)
}

func retryableError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func backoff(p Policy, attempt int) time.Duration {
	d := float64(p.InitialBackoff)
	for i := 1; i < attempt; i++ {
		d *= p.Multiplier
		if d >= float64(p.MaxBackoff) {
			d = float64(p.MaxBackoff)
			break
		}
	}
	// Equal jitter: half fixed, half random, so waits spread but never collapse to zero.
	return time.Duration(d/2 + rand.Float64()*d/2)
}

// Wait pauses before retry number attempt (1 for the first retry) with the
// policy's backoff and jitter, as the Transport does between attempts; it
// returns ctx's error if ctx ends first. Callers that retry a whole call
// (a stream cut after its 200, which the Transport cannot see) use it so both
// levels back off alike.
func (p Policy) Wait(ctx context.Context, attempt int) error {
	p = p.withDefaults()
	return p.Sleep(ctx, backoff(p, attempt))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// replayable returns the request to send and a function that yields a fresh
// copy of its body for retries. A body the request cannot rewind itself is
// buffered, on a clone so the caller's request stays untouched.
func replayable(req *http.Request) (*http.Request, func() (io.ReadCloser, error), error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil, nil
	}
	if req.GetBody != nil {
		return req, req.GetBody, nil
	}
	data, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("httpx: reading the request body: %w", err)
	}
	getBody := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	out := req.Clone(req.Context())
	out.Body, _ = getBody()
	out.GetBody = getBody
	out.ContentLength = int64(len(data))
	return out, getBody, nil
}

func drain(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, 64<<10)
	body.Close()
}

func (t *Transport) acquire(ctx context.Context) error {
	if t.slots == nil {
		return nil
	}
	select {
	case t.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *Transport) release() {
	if t.slots != nil {
		<-t.slots
	}
}

func (t *Transport) releaseOnClose(body io.ReadCloser) io.ReadCloser {
	if t.slots == nil {
		return body
	}
	return &slotBody{ReadCloser: body, release: t.release}
}

// slotBody gives the concurrency slot back when the body is closed or fully read.
type slotBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *slotBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.release)
	}
	return n, err
}

func (b *slotBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}

// Setting resolves a count from a config where 0 means the default and a
// negative value means none: it returns def for 0, 0 for v < 0, v otherwise.
func Setting(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}
