package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
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
		&APIError{Provider: "acme", Status: 503, Message: "down"}, // the transport already retried it
		errors.New("acme: building the request: no"),
	} {
		attempts := 0
		_, err := CallModel(context.Background(), fastRetries, "acme", nil, func(context.Context, func(Delta)) (*Response, error) {
			attempts++
			return nil, want
		})
		assert.Equal(t, want, err)
		assert.Equal(t, 1, attempts, "%v", want)
	}
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
	cfg := ClientConfig{RetryBackoff: time.Hour, MaxRetries: 5, Timeout: 20 * time.Millisecond}
	_, err := CallModel(context.Background(), cfg, "acme", nil, func(context.Context, func(Delta)) (*Response, error) {
		return nil, cut(Usage{})
	})
	assert.ErrorIs(t, err, ErrTimeout)
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
