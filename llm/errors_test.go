package llm

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAPIErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *APIError
		want string
	}{
		{
			"rejected key names the variable",
			&APIError{Provider: "gemini", Status: 401, KeyEnv: "GEMINI_API_KEY", Message: "API key not valid. Please pass a valid API key."},
			"gemini: GEMINI_API_KEY was rejected (401): API key not valid. Please pass a valid API key.",
		},
		{
			"forbidden key",
			&APIError{Provider: "anthropic", Status: 403, KeyEnv: "ANTHROPIC_API_KEY", Message: "permission denied"},
			"anthropic: ANTHROPIC_API_KEY was rejected (403): permission denied",
		},
		{
			"401 without a key variable",
			&APIError{Provider: "ollama", Status: 401, Message: "unauthorized"},
			"ollama: Unauthorized (401): unauthorized",
		},
		{
			"rate limited",
			&APIError{Provider: "openai", Status: 429, Message: "Rate limit reached"},
			"openai: Too Many Requests (429): Rate limit reached",
		},
		{
			"server error",
			&APIError{Provider: "gemini", Status: 503, Message: "The model is overloaded."},
			"gemini: Service Unavailable (503): The model is overloaded.",
		},
		{
			"no response: the underlying error",
			&APIError{Provider: "openai", Err: fmt.Errorf("dial tcp 127.0.0.1:1: %w", syscall.ECONNREFUSED)},
			"openai: dial tcp 127.0.0.1:1: connection refused",
		},
		{
			"message preferred over the underlying error",
			&APIError{Provider: "openai", Status: 400, Message: "invalid schema", Err: errors.New("raw body")},
			"openai: Bad Request (400): invalid schema",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.err.Error())
		})
	}
}

func TestAPIErrorIs(t *testing.T) {
	sentinels := []error{ErrRateLimited, ErrAuth, ErrBadRequest, ErrUnavailable, ErrTimeout, ErrUnsupported, ErrNoModel}
	tests := []struct {
		name string
		err  *APIError
		want []error // the sentinels it matches; it matches no other
	}{
		{"429", &APIError{Status: 429}, []error{ErrRateLimited}},
		{"401", &APIError{Status: 401}, []error{ErrAuth}},
		{"403", &APIError{Status: 403}, []error{ErrAuth}},
		{"400", &APIError{Status: 400}, []error{ErrBadRequest}},
		{"404", &APIError{Status: 404}, []error{ErrBadRequest}},
		{"422", &APIError{Status: 422}, []error{ErrBadRequest}},
		{"500", &APIError{Status: 500}, []error{ErrUnavailable}},
		{"503", &APIError{Status: 503}, []error{ErrUnavailable}},
		{"connection failure", &APIError{Err: syscall.ECONNRESET}, []error{ErrUnavailable}},
		{"timeout", &APIError{Err: ErrTimeout}, []error{ErrTimeout}},
		{"wrapped timeout", &APIError{Err: fmt.Errorf("after 3 attempts: %w", ErrTimeout)}, []error{ErrTimeout}},
		{"unsupported", &APIError{Err: ErrUnsupported}, []error{ErrUnsupported}},
		{"409 matches nothing", &APIError{Status: 409}, nil},
		{"empty matches nothing", &APIError{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range sentinels {
				want := false
				for _, w := range tt.want {
					want = want || w == s
				}
				assert.Equal(t, want, errors.Is(tt.err, s), "errors.Is(%v, %v)", tt.name, s)
			}
			wrapped := fmt.Errorf("node generate_query: %w", tt.err)
			var got *APIError
			assert.True(t, errors.As(wrapped, &got))
			assert.Same(t, tt.err, got)
		})
	}
}

func TestAPIErrorUnwrap(t *testing.T) {
	inner := errors.New("inner")
	assert.Same(t, inner, (&APIError{Err: inner}).Unwrap())
	assert.ErrorIs(t, &APIError{Provider: "x", Status: 500, Err: inner}, inner)
}

func TestIsTransient(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&APIError{Provider: "openai", Status: 429}, true},
		{&APIError{Provider: "openai", Status: 503}, true},
		{&APIError{Provider: "anthropic", Status: 529}, true},
		{&APIError{Provider: "openai", Err: syscall.ECONNREFUSED}, true},
		{&APIError{Provider: "openai", Err: fmt.Errorf("%w: cut", ErrStreamBroken)}, true},
		{&APIError{Provider: "gemini", Err: ErrTimeout}, true},
		{fmt.Errorf("node reflection: %w", &APIError{Provider: "gemini", Status: 500}), true},
		{nil, false},
		{&APIError{Provider: "openai", Status: 401}, false},
		{&APIError{Provider: "openai", Status: 403}, false},
		{&APIError{Provider: "openai", Status: 400}, false},
		{&APIError{Provider: "openai", Status: 404}, false},
		{fmt.Errorf("x: %w", ErrUnsupported), false},
		{ErrNoModel, false},
		{context.Canceled, false},
		{fmt.Errorf("run: %w", context.DeadlineExceeded), false},
		{errors.New("tool failed"), false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, IsTransient(tt.err), "%v", tt.err)
	}
}
