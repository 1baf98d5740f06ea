package httpx

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestErrorText(t *testing.T) {
	tests := []struct {
		provider, env string
		status        int
		msg, want     string
	}{
		{"gemini", "GEMINI_API_KEY", 401, "bad key", "gemini: GEMINI_API_KEY was rejected (401): bad key"},
		{"tavily", "TAVILY_API_KEY", 403, "no", "tavily: TAVILY_API_KEY was rejected (403): no"},
		{"openai", "", 401, "bad key", "openai: Unauthorized (401): bad key"},
		{"gemini", "GEMINI_API_KEY", 429, "slow down", "gemini: Too Many Requests (429): slow down"},
		{"anthropic", "", 529, "busy", "anthropic: Overloaded (529): busy"},
		{"x", "", 599, "odd", "x: HTTP error (599): odd"},
		{"searxng", "", 0, "connection refused", "searxng: connection refused"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ErrorText(tt.provider, tt.env, tt.status, tt.msg))
	}
}

func TestSetting(t *testing.T) {
	assert.Equal(t, 3, Setting(0, 3))
	assert.Equal(t, 0, Setting(-1, 3))
	assert.Equal(t, 7, Setting(7, 3))
}
