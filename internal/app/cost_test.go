package app

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
)

// TestCostUSD: the total a run's record keeps is nil when a role's price is
// unknown, never 0, and the config's prices win over the built-in ones.
func TestCostUSD(t *testing.T) {
	million := llm.Tally{Calls: 1, Usage: llm.Usage{PromptTokens: 1_000_000, CompletionTokens: 1_000_000, TotalTokens: 2_000_000}}
	tests := []struct {
		name   string
		usage  llm.UsageByRole
		models map[string]string
		prices llm.Prices
		want   *float64
	}{
		{"built-in price", llm.UsageByRole{llm.RoleAnswer: million}, map[string]string{llm.RoleAnswer: "openai:gpt-4.1-mini"}, nil, new(0.40 + 1.60)},
		{"config's price wins", llm.UsageByRole{llm.RoleAnswer: million}, map[string]string{llm.RoleAnswer: "openai:gpt-4.1-mini"},
			llm.Prices{"openai:gpt-4.1-mini": {Input: 1, Output: 2}}, new(3.0)},
		{"one unknown price makes it unknown", llm.UsageByRole{llm.RoleAnswer: million, llm.RoleQuery: million},
			map[string]string{llm.RoleAnswer: "openai:gpt-4.1-mini", llm.RoleQuery: "compatible:local-thing"}, nil, nil},
		{"unknown priced by the config", llm.UsageByRole{llm.RoleAgent: million}, map[string]string{llm.RoleAgent: "compatible:local-thing"},
			llm.Prices{"compatible:local-thing": {Input: 0.5, Output: 0.5}}, new(1.0)},
		{"ollama is free", llm.UsageByRole{llm.RoleAgent: million}, map[string]string{llm.RoleAgent: "ollama:llama3"}, nil, new(0.0)},
		{"no calls cost nothing", llm.UsageByRole{}, map[string]string{llm.RoleAgent: "compatible:x"}, nil, new(0.0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CostUSD(tt.usage, tt.models, tt.prices)
			if tt.want == nil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.InDelta(t, *tt.want, *got, 1e-12)
		})
	}
}
