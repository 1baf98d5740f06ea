package openai

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/wiretest"
	"github.com/deepgraph/deepgraph/schemas"
)

// llm.CachePrompt sends a prompt_cache_key derived from the run's stable
// prefix — the same for the steps of one run, another for another task —
// to servers configured for it; never without CachePrompt.
func TestPromptCacheKey(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		wiretest.WriteJSON(w, http.StatusOK, completion("ok", nil))
	})
	on := newTestModel(t, f, func(c *Config) { c.PromptCacheKey = PromptCacheKeyOn })
	auto := newTestModel(t, f, nil) // a compatible server: off by default
	step := func(task string, turns ...string) []schemas.Message {
		msgs := []schemas.Message{schemas.SystemMessage("Be careful."), schemas.UserMessage(task)}
		for _, t := range turns {
			msgs = append(msgs, schemas.AssistantMessage(t), schemas.UserMessage("go on"))
		}
		return msgs
	}
	for _, c := range []struct {
		m    *Model
		msgs []schemas.Message
		opts []llm.Option
	}{
		{on, step("task A"), []llm.Option{llm.CachePrompt()}},
		{on, step("task A", "one", "two"), []llm.Option{llm.CachePrompt()}},
		{on, step("task B"), []llm.Option{llm.CachePrompt()}},
		{on, step("task A"), nil},
		{auto, step("task A"), []llm.Option{llm.CachePrompt()}},
	} {
		_, err := c.m.Generate(context.Background(), c.msgs, c.opts...)
		require.NoError(t, err)
	}
	reqs := f.Requests()
	require.Len(t, reqs, 5)
	key := func(i int) string { k, _ := reqs[i].Body["prompt_cache_key"].(string); return k }
	assert.True(t, strings.HasPrefix(key(0), "deepgraph-"), key(0))
	assert.Equal(t, key(0), key(1), "the steps of one run share the key")
	assert.NotEqual(t, key(0), key(2), "another task, another key")
	assert.NotContains(t, reqs[3].Body, "prompt_cache_key")
	assert.NotContains(t, reqs[4].Body, "prompt_cache_key", "compatible servers may reject the field")
}
