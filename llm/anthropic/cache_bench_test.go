package anthropic_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/anthropic"
	"github.com/deepgraph/deepgraph/llm/internal/wiretest"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/tools"
)

// cachingServer is a Messages API fake that honours prompt caching as
// Anthropic documents it: the prompt is a sequence of blocks (tools, system,
// then each turn's content blocks); a block with cache_control is a
// breakpoint; a request reads the longest prefix, ending at a block
// boundary at most 20 blocks before one of its breakpoints, that an earlier
// request wrote; it writes the prefixes ending at its breakpoints. Prefixes
// under 1024 tokens are not cached. A token is 4 bytes of the block's JSON.
// The replies script an agent: read_page until step steps, then terminate.
type cachingServer struct {
	steps int
	mu    sync.Mutex
	cache map[[32]byte]bool
}

// blocks flattens a request body into its cacheable blocks: each block's
// JSON without its cache_control, and whether it had one (a breakpoint).
func blocks(body map[string]any) (texts []string, marks []bool) {
	add := func(role any, b any) {
		mark := false
		if m, ok := b.(map[string]any); ok {
			if _, has := m["cache_control"]; has {
				mark = true
				c := make(map[string]any, len(m))
				for k, v := range m {
					if k != "cache_control" {
						c[k] = v
					}
				}
				b = c
			}
		}
		j, _ := json.Marshal(map[string]any{"role": role, "block": b})
		texts, marks = append(texts, string(j)), append(marks, mark)
	}
	for _, t := range asList(body["tools"]) {
		add("tool", t)
	}
	switch sys := body["system"].(type) {
	case string:
		add("system", map[string]any{"type": "text", "text": sys})
	case []any:
		for _, b := range sys {
			add("system", b)
		}
	}
	for _, m := range asList(body["messages"]) {
		msg := m.(map[string]any)
		for _, b := range asList(msg["content"]) {
			add(msg["role"], b)
		}
	}
	return texts, marks
}

func asList(v any) []any { l, _ := v.([]any); return l }

// serve answers one request with usage as the cache rules give it.
func (s *cachingServer) serve(w http.ResponseWriter, req wiretest.Request) {
	texts, marks := blocks(req.Body)
	prefixTokens := make([]int, len(texts))
	hashes := make([][32]byte, len(texts))
	h := sha256.New()
	total := 0
	for i, t := range texts {
		total += len(t) / 4
		prefixTokens[i] = total
		fmt.Fprintf(h, "%d:%s|", len(t), t)
		copy(hashes[i][:], h.Sum(nil))
	}
	s.mu.Lock()
	read, last := 0, -1
	for b, mark := range marks {
		if !mark {
			continue
		}
		last = b
		for q := b; q >= 0 && q >= b-20; q-- {
			if s.cache[hashes[q]] && prefixTokens[q] > read {
				read = prefixTokens[q]
			}
		}
	}
	written := 0
	if last >= 0 && prefixTokens[last] >= 1024 {
		written = max(prefixTokens[last]-read, 0)
	}
	for b, mark := range marks {
		if mark && prefixTokens[b] >= 1024 {
			s.cache[hashes[b]] = true
		}
	}
	s.mu.Unlock()

	steps := 0
	for _, m := range asList(req.Body["messages"]) {
		if m.(map[string]any)["role"] == "assistant" {
			steps++
		}
	}
	call := map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", steps), "name": "read_page", "input": map[string]any{"n": steps}}
	if steps+1 >= s.steps {
		call = map[string]any{"type": "tool_use", "id": "toolu_end", "name": "terminate", "input": map[string]any{"status": "success", "answer": "Done."}}
	}
	usage := map[string]any{"input_tokens": total - read - written, "output_tokens": 20,
		"cache_read_input_tokens": read, "cache_creation_input_tokens": written}
	if req.Body["stream"] != true {
		wiretest.WriteJSON(w, http.StatusOK, map[string]any{
			"id": "msg", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": []any{map[string]any{"type": "text", "text": "Reading on."}, call}, "stop_reason": "tool_use", "usage": usage,
		})
		return
	}
	input, _ := json.Marshal(call["input"])
	delete(call, "input")
	w.Header().Set("Content-Type", "text/event-stream")
	for _, ev := range []map[string]any{
		{"type": "message_start", "message": map[string]any{"id": "msg", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": []any{}, "usage": usage}},
		{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}},
		{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "Reading on."}},
		{"type": "content_block_stop", "index": 0},
		{"type": "content_block_start", "index": 1, "content_block": call},
		{"type": "content_block_delta", "index": 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}},
		{"type": "content_block_stop", "index": 1},
		{"type": "message_delta", "delta": map[string]any{"stop_reason": "tool_use"}, "usage": map[string]any{"output_tokens": 20}},
		{"type": "message_stop"},
	} {
		data, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], data)
	}
}

// BenchmarkAgentPromptCache runs a 20-step agent on Anthropic against a
// fake that caches prompt prefixes as the API does, and reports the share of
// input tokens read from the cache, and the run's cost with caching relative
// to the same tokens without it (at claude-sonnet-4-5's prices).
func BenchmarkAgentPromptCache(b *testing.B) {
	const steps = 20
	page := strings.Repeat("A page of text the agent has read, with facts in it. ", 60) // ~800 tokens
	read, err := tools.Func("read_page", "Reads the next page.", func(_ context.Context, a struct {
		N int `json:"n"`
	}) (tools.Result, error) {
		return tools.Result{Output: fmt.Sprintf("page %d: %s", a.N, page)}, nil
	})
	require.NoError(b, err)
	system := "You are a careful research agent. " + strings.Repeat("Follow the rules of the task precisely and cite what you read. ", 70)
	price, _ := llm.PriceFor("anthropic:claude-sonnet-4-5")
	var share, costRatio float64
	for b.Loop() {
		s := &cachingServer{steps: steps, cache: map[[32]byte]bool{}}
		var f *wiretest.Server
		f = wiretest.NewServer(b, func(w http.ResponseWriter, _ *http.Request, n int) { s.serve(w, f.Requests()[n-1]) })
		model, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-bench-0123456789", BaseURL: f.URL,
			Client: llm.ClientConfig{HTTPClient: f.Client()}, Getenv: func(string) string { return "" }})
		require.NoError(b, err)
		coll, err := tools.NewCollection(read)
		require.NoError(b, err)
		agent, err := nodes.NewAgent(nodes.AgentConfig{Model: model, Tools: coll, SystemPrompt: system, MaxSteps: steps + 5})
		require.NoError(b, err)
		res, err := agent.Run(context.Background(), "Read the pages and sum up what they say.", nil)
		require.NoError(b, err)
		require.Equal(b, steps, res.Steps)
		u := res.Usage.Total().Usage
		share = float64(u.CachedTokens) / float64(u.PromptTokens)
		uncached := u
		uncached.CachedTokens, uncached.CacheWriteTokens = 0, 0
		costRatio = price.Cost(u) / price.Cost(uncached)
		f.Close()
	}
	b.ReportMetric(share*100, "%cached")
	b.ReportMetric(costRatio, "cost/uncached")
}
