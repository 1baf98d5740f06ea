package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cut is what a provider returns for a stream cut off after its 200.
func cut(reported Usage) error {
	return &APIError{Provider: "acme", Message: "the event stream broke off: unexpected EOF",
		Err: fmt.Errorf("%w: %w", ErrStreamBroken, io.ErrUnexpectedEOF), Usage: reported}
}

var fastRetries = ClientConfig{RetryBackoff: time.Microsecond, MaxRetries: 2, Timeout: 10 * time.Second}

func TestCallModelRetriesABrokenStream(t *testing.T) {
	var got []Delta
	attempts := 0
	resp, err := CallModel(context.Background(), fastRetries, "acme", func(d Delta) { got = append(got, d) },
		func(_ context.Context, onDelta func(Delta)) (*Response, error) {
			attempts++
			switch attempts {
			case 1: // cut after some text
				onDelta(Delta{Content: "Hal"})
				return nil, cut(Usage{PromptTokens: 10, TotalTokens: 10})
			case 2: // cut before any text
				return nil, cut(Usage{})
			}
			onDelta(Delta{Reasoning: "r"})
			onDelta(Delta{Content: "Hello"})
			return &Response{Content: "Hello", Usage: Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}}, nil
		})
	require.NoError(t, err)
	assert.Equal(t, 3, attempts)
	assert.Equal(t, "Hello", resp.Content)
	assert.Equal(t, Usage{PromptTokens: 20, CompletionTokens: 2, TotalTokens: 22}, resp.Usage, "the cut attempt's reported tokens count")
	assert.Equal(t, []Delta{{Content: "Hal"}, {Restart: true}, {Reasoning: "r"}, {Content: "Hello"}}, got,
		"one Restart, after the attempt that had sent text; none after the one that had not")
}

func TestCallModelDoesNotRetryOtherErrors(t *testing.T) {
	for _, want := range []error{
		&APIError{Provider: "acme", Status: 400, Message: "bad"},
		&APIError{Provider: "acme", Status: 501, Message: "not implemented"},
		&APIError{Provider: "acme", Message: "request failed", Err: errors.New("tls: bad certificate")},
		errors.New("acme: building the request: no"),
	} {
		attempts := 0
		_, err := CallModel(context.Background(), fastRetries, "acme", nil, func(context.Context, func(Delta)) (*Response, error) {
			attempts++
			return nil, want
		})
		assert.Equal(t, want.Error(), err.Error())
		var wantAPI *APIError
		if errors.As(want, &wantAPI) {
			var got *APIError
			require.ErrorAs(t, err, &got)
			assert.Equal(t, wantAPI.Status, got.Status)
			assert.Equal(t, 1, got.Attempts)
		} else {
			assert.ErrorIs(t, err, want)
		}
		assert.Equal(t, 1, attempts, "%v", want)
		assert.True(t, IsFinal(err), "the client decided: a node must not retry %v", want)
	}
}

// One loop retries statuses, dropped connections and cut streams alike,
// within one budget: a 503, then a cut stream, then a 429 are three retries
// of one call, not three budgets.
func TestCallModelOneBudgetForEveryKindOfFailure(t *testing.T) {
	failures := []error{
		&APIError{Provider: "acme", Status: 503, Message: "down"},
		cut(Usage{}),
		&APIError{Provider: "acme", Status: 429, Message: "slow down", RetryAfter: time.Microsecond},
		&APIError{Provider: "acme", Message: "request failed", Err: fmt.Errorf("read: %w", syscall.ECONNRESET)},
		&APIError{Provider: "acme", Status: 529, Message: "overloaded"},
	}
	for _, retries := range []int{-1, 0, 1, 2, 4} {
		cfg := fastRetries
		cfg.MaxRetries = retries
		attempts := 0
		_, err := CallModel(context.Background(), cfg, "acme", nil, func(context.Context, func(Delta)) (*Response, error) {
			attempts++
			return nil, failures[(attempts-1)%len(failures)]
		})
		require.Error(t, err)
		want := retries + 1
		switch {
		case retries == 0:
			want = DefaultMaxRetries + 1
		case retries < 0:
			want = 1
		}
		assert.Equal(t, want, attempts, "retries %d", retries)
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		if retries < 0 {
			assert.False(t, IsFinal(err), "retries off: the caller's retries are the only ones")
			assert.Zero(t, apiErr.Attempts)
			continue
		}
		assert.True(t, IsFinal(err))
		assert.Equal(t, want, apiErr.Attempts)
	}
}

func TestCallModelGivesUpOnALongRetryAfter(t *testing.T) {
	attempts := 0
	_, err := CallModel(context.Background(), fastRetries, "acme", nil, func(context.Context, func(Delta)) (*Response, error) {
		attempts++
		return nil, &APIError{Provider: "acme", Status: 429, Message: "quota", RetryAfter: 2 * time.Hour}
	})
	assert.Equal(t, 1, attempts, "a Retry-After over a minute ends the retries at once")
	assert.ErrorIs(t, err, ErrRateLimited)
	assert.True(t, IsFinal(err))
}

func TestCallModelAlwaysBroken(t *testing.T) {
	tests := []struct {
		retries, wantAttempts int
		wantMsg               string
	}{
		{2, 3, "acme: the event stream broke off: unexpected EOF; it was cut off on all 3 attempts: something between here and acme"},
		{-1, 1, "acme: the event stream broke off: unexpected EOF; retries are off (raise them in config)"},
		{0, DefaultMaxRetries + 1, fmt.Sprintf("cut off on all %d attempts", DefaultMaxRetries+1)},
	}
	for _, tt := range tests {
		cfg := fastRetries
		cfg.MaxRetries = tt.retries
		attempts := 0
		resp, err := CallModel(context.Background(), cfg, "acme", nil, func(_ context.Context, onDelta func(Delta)) (*Response, error) {
			attempts++
			assert.Nil(t, onDelta, "no callback when the caller does not stream")
			return nil, cut(Usage{PromptTokens: 5, TotalTokens: 5})
		})
		assert.Nil(t, resp)
		assert.Equal(t, tt.wantAttempts, attempts)
		assert.ErrorIs(t, err, ErrStreamBroken)
		assert.ErrorIs(t, err, ErrUnavailable)
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, "acme", apiErr.Provider)
		assert.Equal(t, 5*tt.wantAttempts, apiErr.Usage.PromptTokens, "every attempt's reported tokens")
		assert.Contains(t, err.Error(), tt.wantMsg)
	}
}

func TestCallModelHonoursCancellationBetweenAttempts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := ClientConfig{RetryBackoff: time.Hour, MaxRetries: 5, Timeout: -1}
	attempts := 0
	_, err := CallModel(ctx, cfg, "acme", nil, func(context.Context, func(Delta)) (*Response, error) {
		attempts++
		cancel() // the caller gives up while the call waits to retry
		return nil, cut(Usage{})
	})
	assert.Equal(t, context.Canceled, err)
	assert.Equal(t, 1, attempts)
}

func TestCallModelTimeoutBoundsTheRetries(t *testing.T) {
	t.Run("a wait that would outlast the timeout is not begun", func(t *testing.T) {
		cfg := ClientConfig{RetryBackoff: time.Hour, MaxRetries: 5, Timeout: time.Minute}
		attempts := 0
		_, err := CallModel(context.Background(), cfg, "acme", nil, func(context.Context, func(Delta)) (*Response, error) {
			attempts++
			return nil, cut(Usage{})
		})
		assert.ErrorIs(t, err, ErrStreamBroken, "the last attempt's error")
		assert.Equal(t, 1, attempts)
		assert.True(t, IsFinal(err))
	})
	t.Run("an attempt cut by the timeout", func(t *testing.T) {
		cfg := ClientConfig{RetryBackoff: time.Microsecond, MaxRetries: 5, Timeout: 20 * time.Millisecond}
		_, err := CallModel(context.Background(), cfg, "acme", nil, func(ctx context.Context, _ func(Delta)) (*Response, error) {
			<-ctx.Done()
			return nil, &APIError{Provider: "acme", Message: "request failed", Err: ctx.Err()}
		})
		assert.ErrorIs(t, err, ErrTimeout)
		assert.True(t, IsFinal(err), "the call had its time")
	})
}

func TestCallModelDropsLateDeltasOfAnAbandonedAttempt(t *testing.T) {
	var got []Delta
	var stale func(Delta)
	attempts := 0
	_, err := CallModel(context.Background(), fastRetries, "acme", func(d Delta) { got = append(got, d) },
		func(_ context.Context, onDelta func(Delta)) (*Response, error) {
			attempts++
			if attempts == 1 {
				stale = onDelta
				onDelta(Delta{Content: "a"})
				return nil, cut(Usage{})
			}
			stale(Delta{Content: "late"}) // a reader goroutine of the first attempt
			onDelta(Delta{Content: "b"})
			return &Response{Content: "b"}, nil
		})
	require.NoError(t, err)
	assert.Equal(t, []Delta{{Content: "a"}, {Restart: true}, {Content: "b"}}, got)
}
