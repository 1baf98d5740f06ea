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

// Consecutive text-only user messages — a prompt laid out in blocks for
// Anthropic's cache, an agent's observations in text mode — are sent as one
// user message, their texts joined by a blank line, for the chat templates
// that refuse two user messages in a row; a message with images, or any
// other role, ends the run.
func TestConsecutiveUserMessagesAreOne(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		wiretest.WriteJSON(w, http.StatusOK, completion("ok", nil))
	})
	img := schemas.Image{MIMEType: "image/png", Data: []byte{1}}
	_, err := newTestModel(t, f, nil).Generate(context.Background(), []schemas.Message{
		schemas.SystemMessage("Be careful."),
		schemas.UserMessage("Head."),
		schemas.UserMessage("Finding 1."),
		{Role: schemas.User, Content: "Tail.", Transient: true},
		schemas.AssistantMessage("Noted."),
		schemas.UserMessage("Look."),
		{Role: schemas.User, Content: "This picture.", Images: []schemas.Image{img}},
		schemas.UserMessage("Thanks."),
	})
	require.NoError(t, err)
	assert.JSONEq(t, `[
		{"role":"system","content":"Be careful."},
		{"role":"user","content":"Head.\n\nFinding 1.\n\nTail."},
		{"role":"assistant","content":"Noted."},
		{"role":"user","content":"Look."},
		{"role":"user","content":[{"type":"text","text":"This picture."},{"type":"image_url","image_url":{"url":"data:image/png;base64,AQ=="}}]},
		{"role":"user","content":"Thanks."}
	]`, wiretest.JSON(t, f.Requests()[0].Body["messages"]))
}
