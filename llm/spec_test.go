package llm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		spec, provider, model string
	}{
		{"gemini:gemini-2.5-flash", "gemini", "gemini-2.5-flash"},
		{"openai:gpt-4.1-mini", "openai", "gpt-4.1-mini"},
		{"anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"},
		{"ollama:qwen3:8b", "ollama", "qwen3:8b"},
		{"compatible:meta-llama/Llama-3.1-8B-Instruct", "compatible", "meta-llama/Llama-3.1-8B-Instruct"},
		{"openai-compatible:deepseek-chat", "compatible", "deepseek-chat"},
		{"google:gemini-2.5-pro", "gemini", "gemini-2.5-pro"},
		{"claude:claude-opus-4-1", "anthropic", "claude-opus-4-1"},
		{"  Gemini : gemini-2.5-flash ", "gemini", "gemini-2.5-flash"},
		{"OLLAMA:Qwen3:8B", "ollama", "Qwen3:8B"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			p, m, err := llm.ParseSpec(tt.spec)
			require.NoError(t, err)
			assert.Equal(t, tt.provider, p)
			assert.Equal(t, tt.model, m)
			assert.Contains(t, llm.Providers(), p)
		})
	}
}

func TestParseSpecErrors(t *testing.T) {
	tests := []struct {
		spec string
		want []string
	}{
		{"", []string{"empty", "gemini:gemini-2.5-flash", "ollama:qwen3:8b"}},
		{"   ", []string{"empty"}},
		{"gemini-2.5-flash", []string{`"gemini-2.5-flash"`, "no provider prefix", "did you mean gemini:gemini-2.5-flash?", "provider:model"}},
		{"gpt-4o", []string{"did you mean openai:gpt-4o?"}},
		{"claude-sonnet-4-5", []string{"did you mean anthropic:claude-sonnet-4-5?"}},
		{"gemini/gemini-2.5-flash", []string{"did you mean gemini:gemini-2.5-flash?"}},
		{"llama3", []string{"no provider prefix", "providers: gemini"}},
		{"mistral:large", []string{`unknown provider "mistral"`, "anthropic", "compatible"}},
		{"gemini:", []string{`no model name after "gemini:"`}},
		{":gpt-4o", []string{`unknown provider ""`}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			p, m, err := llm.ParseSpec(tt.spec)
			require.Error(t, err)
			assert.Empty(t, p)
			assert.Empty(t, m)
			assert.ErrorIs(t, err, llm.ErrInvalidSpec)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	_, _, err := llm.ParseSpec("")
	assert.ErrorIs(t, err, llm.ErrNoModel)
}
