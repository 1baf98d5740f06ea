package llm

import (
	"context"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCallTimeoutIsAnAPIError(t *testing.T) {
	cfg := ClientConfig{Timeout: 20 * time.Millisecond}
	_, err := Call(context.Background(), cfg, "gemini", func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	require.Error(t, err)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "gemini", apiErr.Provider)
	assert.ErrorIs(t, err, ErrTimeout)
	assert.NotErrorIs(t, err, ErrUnavailable, "a timeout is not an outage")
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "the caller's context did not expire")
	assert.Equal(t, "gemini: no complete reply within 20ms (raise the timeout in config)", err.Error())
}

func TestCallParentCancellation(t *testing.T) {
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
		{"parent deadline shorter than the timeout", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 10*time.Millisecond)
		}, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			got, err := Call(ctx, ClientConfig{Timeout: time.Minute}, "openai", func(ctx context.Context) (int, error) {
				<-ctx.Done()
				return 7, errors.New("transport: " + ctx.Err().Error())
			})
			assert.Zero(t, got, "no partial result on failure")
			assert.Equal(t, tt.want, err, "the parent's own error, unwrapped")
			var apiErr *APIError
			assert.False(t, errors.As(err, &apiErr))
		})
	}
}

func TestCallDeadlines(t *testing.T) {
	tests := []struct {
		name         string
		timeout      time.Duration
		wantDeadline bool
		around       time.Duration
	}{
		{"default", 0, true, DefaultTimeout},
		{"configured", 5 * time.Second, true, 5 * time.Second},
		{"negative means none", -1, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The deadline is set between before and after, plus the
			// timeout: bounds that hold however slow the machine is.
			before := time.Now()
			var dl time.Time
			var ok bool
			_, err := Call(context.Background(), ClientConfig{Timeout: tt.timeout}, "x", func(ctx context.Context) (struct{}, error) {
				dl, ok = ctx.Deadline()
				return struct{}{}, nil
			})
			after := time.Now()
			assert.NoError(t, err)
			assert.Equal(t, tt.wantDeadline, ok)
			if ok {
				assert.False(t, dl.Before(before.Add(tt.around)), "deadline %s, called at %s", dl, before)
				assert.False(t, dl.After(after.Add(tt.around)), "deadline %s, returned at %s", dl, after)
			}
		})
	}
}

func TestCallPassesResultsAndOtherErrors(t *testing.T) {
	got, err := Call(context.Background(), ClientConfig{}, "x", func(context.Context) (string, error) { return "ok", nil })
	require.NoError(t, err)
	assert.Equal(t, "ok", got)

	want := &APIError{Provider: "x", Status: 400, Message: "bad"}
	_, err = Call(context.Background(), ClientConfig{}, "x", func(context.Context) (string, error) { return "", want })
	assert.Same(t, want, err)
}

// statusSequence serves the given statuses in order, then 200s, counting hits.
func statusSequence(t *testing.T, statuses ...int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(hits.Add(1))
		if n <= len(statuses) {
			w.WriteHeader(statuses[n-1])
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// The HTTP client does not retry: CallModel's loop is the one retry loop,
// and counts every send of a call against one budget.
func TestClientRetries(t *testing.T) {
	tests := []struct {
		name       string
		maxRetries int
		statuses   []int
		wantStatus int
		wantHits   int32
	}{
		{"default retries three times", 0, []int{503, 503, 429, 500, 503}, 500, 4},
		{"default succeeds after transient failures", 0, []int{503, 429}, 200, 3},
		{"configured", 1, []int{503, 503}, 503, 2},
		{"negative means no retry", -1, []int{503}, 503, 1},
		{"client errors are not retried", 5, []int{400}, 400, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, hits := statusSequence(t, tt.statuses...)
			cfg := ClientConfig{MaxRetries: tt.maxRetries, RetryBackoff: time.Millisecond}
			client := cfg.Client()
			resp, err := client.Get(srv.URL)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tt.statuses[0], resp.StatusCode)
			assert.Equal(t, int32(1), hits.Load(), "the HTTP client sends once")

			srv, hits = statusSequence(t, tt.statuses...)
			_, err = CallModel(context.Background(), cfg, "x", nil, func(ctx context.Context, _ func(Delta)) (*Response, error) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				require.NoError(t, err)
				resp, err := client.Do(req)
				if err != nil {
					return nil, &APIError{Provider: "x", Err: err}
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return nil, &APIError{Provider: "x", Status: resp.StatusCode}
				}
				return &Response{Content: "ok"}, nil
			})
			var apiErr *APIError
			if tt.wantStatus == http.StatusOK {
				require.NoError(t, err)
			} else if assert.ErrorAs(t, err, &apiErr) {
				assert.Equal(t, tt.wantStatus, apiErr.Status)
			}
			assert.Equal(t, tt.wantHits, hits.Load(), "CallModel's sends")
		})
	}
}

// gate is a RoundTripper that holds every request until released and
// records how many were in flight at once.
type gate struct {
	mu       sync.Mutex
	inflight int
	peak     int
	entered  chan struct{}
	release  chan struct{}
}

func newGate() *gate {
	return &gate{entered: make(chan struct{}, 100), release: make(chan struct{})}
}

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	g.mu.Lock()
	g.inflight++
	g.peak = max(g.peak, g.inflight)
	g.mu.Unlock()
	g.entered <- struct{}{}
	<-g.release
	g.mu.Lock()
	g.inflight--
	g.mu.Unlock()
	return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
}

func (g *gate) current() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inflight
}

func TestClientConcurrencyBound(t *testing.T) {
	tests := []struct {
		name      string
		max       int
		requests  int
		wantPeak  int
		wantFirst int // requests that enter before any is released
	}{
		{"bounded", 2, 5, 2, 2},
		{"negative means unbounded", -1, 5, 5, 5},
		{"the default is no bound: a wide fan-out is not split into waves", 0, 20, 20, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate()
			c := ClientConfig{HTTPClient: &http.Client{Transport: g}, MaxConcurrency: tt.max}.Client()
			var wg sync.WaitGroup
			for range tt.requests {
				wg.Go(func() {
					resp, err := c.Get("http://provider.invalid/")
					if assert.NoError(t, err) {
						resp.Body.Close()
					}
				})
			}
			for range tt.wantFirst {
				<-g.entered
			}
			// Give any request that could slip past the bound a moment to do so.
			time.Sleep(20 * time.Millisecond)
			assert.Equal(t, tt.wantFirst, g.current())
			close(g.release)
			wg.Wait()
			assert.Equal(t, tt.wantPeak, g.peak)
		})
	}
}

func TestClientKeepsTheBaseClient(t *testing.T) {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	g := newGate()
	close(g.release)
	base := &http.Client{Transport: g, Timeout: 42 * time.Second, Jar: jar}
	c := ClientConfig{HTTPClient: base}.Client()
	assert.Equal(t, 42*time.Second, c.Timeout)
	assert.Same(t, jar, c.Jar)
	assert.Same(t, g, base.Transport, "the caller's client is not modified")
	assert.NotSame(t, base, c)

	resp, err := c.Get("http://provider.invalid/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Len(t, g.entered, 1, "requests go through the base transport")
}

func TestClientDefaultTransport(t *testing.T) {
	srv, hits := statusSequence(t)
	resp, err := ClientConfig{}.Client().Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, int32(1), hits.Load())
}
