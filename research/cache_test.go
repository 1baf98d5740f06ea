package research_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/fakeproviders"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/anthropic"
	"github.com/deepgraph/deepgraph/research"
)

// longFindings researches a query into a summary of ~2,000 characters.
type longFindings struct{}

func (longFindings) Name() string { return "long" }

func (longFindings) Research(_ context.Context, _ llm.Model, q research.Query) (research.Finding, error) {
	return research.Finding{Summary: strings.Repeat("A fact about "+q.Text+", with a figure and a name. ", 45)}, nil
}

// runOnAnthropic runs the research graph with cfg (and longFindings) on
// Anthropic against a fake with a prompt cache, and returns the report and
// the reflections' request bodies.
func runOnAnthropic(t *testing.T, cfg research.Config) (*research.Report, []map[string]any) {
	f := newFakeServices(t, latencies{})
	script := anthropicModel(f, &fakeproviders.AnthropicCache{})
	var mu sync.Mutex
	var reflections []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		require.NoError(t, json.Unmarshal(raw, &body))
		if bytes.Contains(raw, []byte(`"name":"Reflection"`)) {
			mu.Lock()
			reflections = append(reflections, body)
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		script(w, r)
	}))
	t.Cleanup(srv.Close)
	model, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-test-0123456789", BaseURL: srv.URL,
		Client: llm.ClientConfig{HTTPClient: srv.Client()}, Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	rep, err := newResearcher(t, model, longFindings{}, cfg).Run(context.Background(), "What is new?")
	require.NoError(t, err)
	return rep, reflections
}

// TestReflectionsReadTheirPrefixFromAnthropicsCache: on Anthropic, each
// reflection of a run is one user turn — the head, one block per finding
// with the cache breakpoint after the last, then the per-call tail — so
// that the next reflection, whose findings only grow at their end, reads
// the previous one's head and findings from the cache.
func TestReflectionsReadTheirPrefixFromAnthropicsCache(t *testing.T) {
	rep, reflections := runOnAnthropic(t, research.Config{InitialQueries: 3, MaxLoops: 3})
	require.Len(t, reflections, 3)
	replay := &fakeproviders.AnthropicCache{} // the reflections' own usage
	var usage []fakeproviders.AnthropicUsage
	for i, body := range reflections {
		usage = append(usage, replay.Use(body, 0))
		msgs := body["messages"].([]any)
		require.Len(t, msgs, 1, "reflection %d is one user turn", i+1)
		blocks := msgs[0].(map[string]any)["content"].([]any)
		require.Len(t, blocks, 1+3*(i+1)+1, "reflection %d: the head, a block per finding, the tail", i+1)
		for j, b := range blocks {
			_, marked := b.(map[string]any)["cache_control"]
			assert.Equal(t, j == len(blocks)-2, marked, "reflection %d, block %d: the breakpoint is after the last finding, before the tail", i+1, j)
		}
		assert.Contains(t, blocks[0].(map[string]any)["text"], "reviewing summaries gathered to answer")
		assert.Contains(t, blocks[len(blocks)-1].(map[string]any)["text"], "Queries already searched")
	}
	assert.Zero(t, usage[0].CacheReadInputTokens)
	for i := 1; i < len(usage); i++ {
		assert.Equal(t, usage[i-1].CacheReadInputTokens+usage[i-1].CacheCreationInputTokens, usage[i].CacheReadInputTokens,
			"reflection %d reads what reflection %d sent up to its breakpoint", i+1, i)
	}
	got := rep.Usage[llm.RoleReflection].Usage
	assert.Equal(t, usage[1].CacheReadInputTokens+usage[2].CacheReadInputTokens, got.CachedTokens, "the report counts the cache reads")
	assert.Positive(t, got.CacheWriteTokens)
}

// A reflection that no other follows, or whose findings do not fit its
// budget in full (so the next one shows them otherwise), asks for no
// cache write: its prompt is one block without a breakpoint.
func TestReflectionsThatCannotBeReadAreNotCached(t *testing.T) {
	for name, cfg := range map[string]research.Config{
		"one reflection":     {InitialQueries: 3, MaxLoops: 1},
		"condensed findings": {InitialQueries: 3, MaxLoops: 2, ContextBudget: 1000},
	} {
		t.Run(name, func(t *testing.T) {
			rep, reflections := runOnAnthropic(t, cfg)
			require.Len(t, reflections, cfg.MaxLoops)
			for i, body := range reflections {
				raw, _ := json.Marshal(body["messages"])
				assert.NotContains(t, string(raw), "cache_control", "reflection %d", i+1)
				assert.Len(t, body["messages"].([]any)[0].(map[string]any)["content"], 1, "reflection %d", i+1)
			}
			assert.Zero(t, rep.Usage[llm.RoleReflection].Usage.CacheWriteTokens)
		})
	}
}
