package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm"
)

func TestCachedTokensShown(t *testing.T) {
	assert.Equal(t, "", cachedText(llm.Usage{PromptTokens: 100}))
	assert.Equal(t, "1,200 cached, 60%", cachedText(llm.Usage{PromptTokens: 2000, CachedTokens: 1200}))

	run := &runstore.Run{Report: json.RawMessage(`{"usage_total":{"prompt_tokens":2000,"cached_tokens":1200}}`)}
	assert.Equal(t, 1200, cachedOf(run))
	assert.Equal(t, 0, cachedOf(&runstore.Run{}), "a run without a report")
}
