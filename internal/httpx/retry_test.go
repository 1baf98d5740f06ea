package httpx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// step is one scripted answer of fakeRT: a response with this status and
// headers, or an error.
type step struct {
	status int
	header http.Header
	err    error
}

// fakeRT answers requests from a script and records what it saw.
type fakeRT struct {
	mu     sync.Mutex
	script []step
	calls  int
	bodies []string
}

func (f *fakeRT) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var body string
	if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		req.Body.Close()
		body = string(b)
	}
	f.bodies = append(f.bodies, body)
	s := f.script[min(f.calls, len(f.script)-1)]
	f.calls++
	if s.err != nil {
		return nil, s.err
	}
	h := s.header
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{
		StatusCode: s.status,
		Status:     http.StatusText(s.status),
		Header:     h,
		Body:       io.NopCloser(strings.NewReader("body of " + http.StatusText(s.status))),
		Request:    req,
	}, nil
}

// sleeps records the waits a Transport asked for instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func header(k, v string) http.Header { h := http.Header{}; h.Set(k, v); return h }

func TestTransportRetriesByStatus(t *testing.T) {
	future := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name       string
		script     []step
		wantStatus int
		wantCalls  int
		// minSleep[i] is the least the i-th wait may be (Retry-After honoured).
		minSleep []time.Duration
		maxSleep []time.Duration
	}{
		{name: "200 needs no retry", script: []step{{status: 200}}, wantStatus: 200, wantCalls: 1},
		{name: "429 then 200 honours Retry-After seconds",
			script:     []step{{status: 429, header: header("Retry-After", "3")}, {status: 200}},
			wantStatus: 200, wantCalls: 2,
			minSleep: []time.Duration{3 * time.Second}, maxSleep: []time.Duration{3 * time.Second}},
		{name: "503 with HTTP-date Retry-After",
			script:     []step{{status: 503, header: header("Retry-After", future)}, {status: 200}},
			wantStatus: 200, wantCalls: 2,
			minSleep: []time.Duration{28 * time.Second}, maxSleep: []time.Duration{30 * time.Second}},
		{name: "500 twice then 200 backs off exponentially",
			script:     []step{{status: 500}, {status: 500}, {status: 200}},
			wantStatus: 200, wantCalls: 3,
			minSleep: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond},
			maxSleep: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
		{name: "Retry-After shorter than backoff keeps backoff",
			script:     []step{{status: 429, header: header("Retry-After", "0")}, {status: 200}},
			wantStatus: 200, wantCalls: 2,
			minSleep: []time.Duration{50 * time.Millisecond}, maxSleep: []time.Duration{100 * time.Millisecond}},
		{name: "408 is retried", script: []step{{status: 408}, {status: 204}}, wantStatus: 204, wantCalls: 2,
			minSleep: []time.Duration{50 * time.Millisecond}, maxSleep: []time.Duration{100 * time.Millisecond}},
		{name: "400 is not retried", script: []step{{status: 400}, {status: 200}}, wantStatus: 400, wantCalls: 1},
		{name: "401 is not retried", script: []step{{status: 401}, {status: 200}}, wantStatus: 401, wantCalls: 1},
		{name: "403 is not retried", script: []step{{status: 403}, {status: 200}}, wantStatus: 403, wantCalls: 1},
		{name: "404 is not retried", script: []step{{status: 404}, {status: 200}}, wantStatus: 404, wantCalls: 1},
		{name: "501 is not retried", script: []step{{status: 501}, {status: 200}}, wantStatus: 501, wantCalls: 1},
		{name: "persistent 503 returns the last response",
			script: []step{{status: 503}}, wantStatus: 503, wantCalls: 4,
			minSleep: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond},
			maxSleep: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}},
		{name: "Retry-After beyond the cap gives up at once",
			script:     []step{{status: 429, header: header("Retry-After", "3600")}, {status: 200}},
			wantStatus: 429, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &fakeRT{script: tt.script}
			var sl sleeps
			tr := NewTransport(rt, Policy{InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Sleep: sl.sleep})
			req, err := http.NewRequest(http.MethodGet, "http://provider.test/x", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, tt.wantStatus, resp.StatusCode)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, "body of "+http.StatusText(tt.wantStatus), string(body), "the caller sees the last body")
			assert.Equal(t, tt.wantCalls, rt.calls)
			got := sl.all()
			require.Len(t, got, len(tt.minSleep))
			for i := range got {
				assert.GreaterOrEqual(t, got[i], tt.minSleep[i], "wait %d", i)
				assert.LessOrEqual(t, got[i], tt.maxSleep[i], "wait %d", i)
			}
		})
	}
}

func TestTransportRetriesErrors(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: &osSyscallError{syscall.ECONNRESET}}
	tests := []struct {
		name      string
		script    []step
		wantErr   error
		wantCalls int
	}{
		{name: "connection reset then success", script: []step{{err: reset}, {status: 200}}, wantCalls: 2},
		{name: "unexpected EOF then success", script: []step{{err: io.ErrUnexpectedEOF}, {status: 200}}, wantCalls: 2},
		{name: "refused then success", script: []step{{err: syscall.ECONNREFUSED}, {status: 200}}, wantCalls: 2},
		{name: "timeout then success", script: []step{{err: timeoutErr{}}, {status: 200}}, wantCalls: 2},
		{name: "other errors are final", script: []step{{err: errTLS}, {status: 200}}, wantErr: errTLS, wantCalls: 1},
		{name: "persistent resets return the last error", script: []step{{err: reset}}, wantErr: syscall.ECONNRESET, wantCalls: 4},
		{name: "a cancelled request is not retried", script: []step{{err: context.Canceled}}, wantErr: context.Canceled, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &fakeRT{script: tt.script}
			var sl sleeps
			tr := NewTransport(rt, Policy{Sleep: sl.sleep})
			req, err := http.NewRequest(http.MethodGet, "http://provider.test/x", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			assert.Equal(t, tt.wantCalls, rt.calls)
			assert.Len(t, sl.all(), tt.wantCalls-1)
			if tt.wantErr != nil {
				require.Error(t, err)
				assert.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, 200, resp.StatusCode)
		})
	}
}

var errTLS = errors.New("tls: bad certificate")

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// osSyscallError mimics os.SyscallError's unwrapping without the os import.
type osSyscallError struct{ err error }

func (e *osSyscallError) Error() string { return "read: " + e.err.Error() }
func (e *osSyscallError) Unwrap() error { return e.err }

func TestTransportReplaysBody(t *testing.T) {
	tests := []struct {
		name string
		body func() io.Reader
	}{
		{name: "rewindable body (GetBody)", body: func() io.Reader { return bytes.NewReader([]byte(`{"q":"go"}`)) }},
		{name: "one-shot body is buffered", body: func() io.Reader { return io.MultiReader(strings.NewReader(`{"q":`), strings.NewReader(`"go"}`)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				got = append(got, string(b))
				mu.Unlock()
				if n.Add(1) < 3 {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				_, _ = io.WriteString(w, "ok")
			}))
			defer srv.Close()
			var sl sleeps
			tr := NewTransport(srv.Client().Transport, Policy{Sleep: sl.sleep})
			req, err := http.NewRequest(http.MethodPost, srv.URL, tt.body())
			require.NoError(t, err)
			origBody := req.Body
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, 200, resp.StatusCode)
			assert.Equal(t, []string{`{"q":"go"}`, `{"q":"go"}`, `{"q":"go"}`}, got)
			assert.True(t, origBody == req.Body, "the caller's request must not be modified")
		})
	}
}

func TestTransportRetriesDroppedConnection(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			require.NoError(t, err)
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // close with RST: connection reset by peer
			}
			conn.Close()
			return
		}
		_, _ = io.WriteString(w, "second time lucky")
	}))
	defer srv.Close()
	var sl sleeps
	tr := NewTransport(srv.Client().Transport, Policy{Sleep: sl.sleep})
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("payload"))
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "second time lucky", string(body))
	assert.Equal(t, int32(2), n.Load())
	assert.Len(t, sl.all(), 1)
}

func TestTransportConcurrencyBound(t *testing.T) {
	const limit, total = 3, 12
	var inFlight, peak atomic.Int32
	release := make(chan struct{})
	reached := make(chan struct{}, total)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur := inFlight.Add(1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		reached <- struct{}{}
		<-release
		inFlight.Add(-1)
		_, _ = io.WriteString(w, "done")
	}))
	defer srv.Close()
	unblock := sync.OnceFunc(func() { close(release) })
	defer unblock() // before srv.Close, even when an assertion stops the test
	tr := NewTransport(srv.Client().Transport, Policy{Concurrency: limit})
	client := tr.Client()

	var wg sync.WaitGroup
	errs := make(chan error, total)
	for range total {
		wg.Go(func() {
			resp, err := client.Get(srv.URL)
			if err != nil {
				errs <- err
				return
			}
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			errs <- err
		})
	}
	for range limit {
		<-reached
	}
	// The bound is full: no further request may reach the server until one finishes.
	select {
	case <-reached:
		t.Fatalf("a request beyond the bound of %d reached the server", limit)
	case <-time.After(50 * time.Millisecond):
	}
	unblock()
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.Equal(t, int32(limit), peak.Load())
}

func TestTransportSlotHeldUntilBodyClosed(t *testing.T) {
	rt := &fakeRT{script: []step{{status: 200}}}
	tr := NewTransport(rt, Policy{Concurrency: 1})
	req, err := http.NewRequest(http.MethodGet, "http://provider.test/stream", nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = tr.RoundTrip(req.WithContext(ctx))
	require.ErrorIs(t, err, context.DeadlineExceeded, "the open body holds the only slot")

	require.NoError(t, resp.Body.Close())
	resp2, err := tr.RoundTrip(req)
	require.NoError(t, err, "closing the body gives the slot back")
	// Reading to EOF also gives it back, and a later Close must not release twice.
	_, err = io.ReadAll(resp2.Body)
	require.NoError(t, err)
	require.NoError(t, resp2.Body.Close())
	resp3, err := tr.RoundTrip(req)
	require.NoError(t, err)
	require.NoError(t, resp3.Body.Close())
	assert.Equal(t, 3, rt.calls)
}

func TestTransportCancelDuringBackoff(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan time.Duration, 1)
	slept := make(chan error, 1)
	// The default sleep, a real timer, must stop when ctx is cancelled.
	tr := NewTransport(srv.Client().Transport, Policy{Sleep: func(ctx context.Context, d time.Duration) error {
		waiting <- d
		err := sleep(ctx, d)
		slept <- err
		return err
	}})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	go func() {
		<-waiting
		cancel()
	}()
	resp, err := tr.RoundTrip(req)
	require.Error(t, err)
	assert.Nil(t, resp)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "429")
	assert.ErrorIs(t, <-slept, context.Canceled, "cancellation must cut the 30s wait short")
	assert.Equal(t, int32(1), n.Load())
}

func TestTransportCancelWhileQueued(t *testing.T) {
	rt := &fakeRT{script: []step{{status: 200}}}
	tr := NewTransport(rt, Policy{Concurrency: 1})
	req, err := http.NewRequest(http.MethodGet, "http://provider.test/", nil)
	require.NoError(t, err)
	held, err := tr.RoundTrip(req)
	require.NoError(t, err)
	defer held.Body.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = tr.RoundTrip(req.WithContext(ctx))
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, rt.calls, "a queued request that is cancelled never reaches the server")
}

func TestTransportCancelledSleepAfterError(t *testing.T) {
	rt := &fakeRT{script: []step{{err: io.ErrUnexpectedEOF}}}
	ctx, cancel := context.WithCancel(context.Background())
	tr := NewTransport(rt, Policy{Sleep: func(context.Context, time.Duration) error { cancel(); return context.Canceled }})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://provider.test/", nil)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled, "the caller learns it was cancelled")
	assert.Contains(t, err.Error(), "unexpected EOF", "and what it was waiting to retry")
	assert.Equal(t, 1, rt.calls)
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{in: "", wantOK: false},
		{in: "0", want: 0, wantOK: true},
		{in: "5", want: 5 * time.Second, wantOK: true},
		{in: " 7 ", want: 7 * time.Second, wantOK: true},
		{in: "1.5", want: 1500 * time.Millisecond, wantOK: true},
		{in: "-1", wantOK: false},
		{in: "NaN", wantOK: false},
		{in: "+Inf", wantOK: false},
		{in: "1e300", want: time.Duration(math.MaxInt64), wantOK: true},
		{in: now.Add(90 * time.Second).Format(http.TimeFormat), want: 90 * time.Second, wantOK: true},
		{in: now.Add(-time.Hour).Format(http.TimeFormat), want: 0, wantOK: true},
		{in: "Mon, 02 Nov 2026 10:00:30 GMT", want: 30 * time.Second, wantOK: true},
		{in: "soon", wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := ParseRetryAfter(tt.in, now)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRetryableStatus(t *testing.T) {
	tests := []struct {
		code int
		want bool
	}{
		{200, false}, {301, false}, {400, false}, {401, false}, {403, false}, {404, false},
		{408, true}, {429, true}, {500, true}, {501, false}, {502, true}, {503, true},
		{504, true}, {505, false}, {599, true}, {600, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, RetryableStatus(tt.code), "status %d", tt.code)
	}
}

func TestBackoffBounds(t *testing.T) {
	p := Policy{InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}.withDefaults()
	for attempt, full := range map[int]time.Duration{
		1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond,
		4: 800 * time.Millisecond, 5: time.Second, 30: time.Second,
	} {
		for range 50 {
			d := backoff(p, attempt)
			assert.GreaterOrEqual(t, d, full/2, "attempt %d", attempt)
			assert.LessOrEqual(t, d, full, "attempt %d", attempt)
		}
	}
}

func TestPolicyDefaults(t *testing.T) {
	p := Policy{Multiplier: 0.5}.withDefaults()
	assert.Equal(t, 4, p.MaxAttempts)
	assert.Equal(t, 500*time.Millisecond, p.InitialBackoff)
	assert.Equal(t, 20*time.Second, p.MaxBackoff)
	assert.Equal(t, 2.0, p.Multiplier)
	assert.Equal(t, 60*time.Second, p.MaxRetryAfter)
	require.NotNil(t, p.Sleep)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, p.Sleep(ctx, time.Hour), context.Canceled)
	assert.NoError(t, p.Sleep(context.Background(), time.Millisecond))
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "1.5", "-3", "NaN", "1e309", "Wed, 21 Oct 2015 07:28:00 GMT", "x"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := ParseRetryAfter(v, now)
		if ok && d < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, a negative wait", v, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v with ok=false", v, d)
		}
	})
}

func TestWaitAfter(t *testing.T) {
	var waited []time.Duration
	p := Policy{InitialBackoff: 10 * time.Millisecond, MaxRetryAfter: time.Minute,
		Sleep: func(_ context.Context, d time.Duration) error { waited = append(waited, d); return nil }}
	ctx := context.Background()

	require.NoError(t, p.WaitAfter(ctx, 1, 0))
	require.NoError(t, p.WaitAfter(ctx, 1, 3*time.Second))
	require.Len(t, waited, 2)
	assert.GreaterOrEqual(t, waited[0], 5*time.Millisecond, "the backoff, with equal jitter")
	assert.LessOrEqual(t, waited[0], 10*time.Millisecond)
	assert.Equal(t, 3*time.Second, waited[1], "a longer Retry-After wins")

	err := p.WaitAfter(ctx, 1, 2*time.Minute)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "asks to wait 2m0s")

	short, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	p.MaxRetryAfter = 2 * time.Hour
	err = p.WaitAfter(short, 1, 90*time.Minute)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "would outlast the call's deadline")
	assert.Len(t, waited, 2, "no wait begun that could not help")
}

func TestRetryableError(t *testing.T) {
	assert.True(t, RetryableError(fmt.Errorf("read: %w", syscall.ECONNRESET)))
	assert.True(t, RetryableError(io.ErrUnexpectedEOF))
	assert.False(t, RetryableError(context.Canceled))
	assert.False(t, RetryableError(errors.New("tls: bad certificate")))
}
