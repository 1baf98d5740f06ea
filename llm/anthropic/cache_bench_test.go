package anthropic_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/fakeproviders"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/anthropic"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/tools"
)

// agentScript answers an agent's steps with read_page until steps steps,
// then terminate, with usage from cache (a fake of Anthropic's prompt
// cache).
func agentScript(steps int, cache *fakeproviders.AnthropicCache) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := fakeproviders.ReadAnthropicRequest(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		step := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				step++
			}
		}
		call := fakeproviders.AnthropicToolUse(fmt.Sprintf("toolu_%d", step), "read_page", map[string]any{"n": step})
		if step+1 >= steps {
			call = fakeproviders.AnthropicToolUse("toolu_end", "terminate", map[string]any{"status": "success", "answer": "Done."})
		}
		fakeproviders.WriteAnthropicMessage(w, req.Stream, []map[string]any{fakeproviders.AnthropicText("Reading on."), call}, cache.Use(req.Body, 20))
	}
}

// browserState is a state source shown before each step (as a browser's
// page is): ~500 tokens that change with every page read.
type browserState struct{ page *int }

func (browserState) Name() string { return "browser" }

func (s browserState) State(context.Context) string {
	return fmt.Sprintf("Tab 1, page %d: ", *s.page) + strings.Repeat("[12] a link on the page  ", 80)
}

// BenchmarkAgentPromptCache runs a 20-step agent on Anthropic against a
// fake that caches prompt prefixes as the API does, and reports the share of
// input tokens read from the cache, and the run's cost with caching relative
// to the same tokens without it (at claude-sonnet-4-5's prices) — without
// and with a state shown before each step (a browser's page, which changes
// every step).
//
//	go test -run '^$' -bench AgentPromptCache -benchtime 1x ./llm/anthropic
func BenchmarkAgentPromptCache(b *testing.B) {
	const steps = 20
	page := strings.Repeat("A page of text the agent has read, with facts in it. ", 60) // ~800 tokens
	system := "You are a careful research agent. " + strings.Repeat("Follow the rules of the task precisely and cite what you read. ", 70)
	price, _ := llm.PriceFor("anthropic:claude-sonnet-4-5")
	for _, withState := range []bool{false, true} {
		b.Run(fmt.Sprintf("state=%t", withState), func(b *testing.B) {
			var share, costRatio float64
			for b.Loop() {
				pages := 0
				read, err := tools.Func("read_page", "Reads the next page.", func(_ context.Context, a struct {
					N int `json:"n"`
				}) (tools.Result, error) {
					pages++
					return tools.Result{Output: fmt.Sprintf("page %d: %s", a.N, page)}, nil
				})
				require.NoError(b, err)
				f := httptest.NewServer(agentScript(steps, &fakeproviders.AnthropicCache{}))
				model, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-bench-0123456789", BaseURL: f.URL,
					Client: llm.ClientConfig{HTTPClient: f.Client()}, Getenv: func(string) string { return "" }})
				require.NoError(b, err)
				coll, err := tools.NewCollection(read)
				require.NoError(b, err)
				cfg := nodes.AgentConfig{Model: model, Tools: coll, SystemPrompt: system, MaxSteps: steps + 5}
				if withState {
					cfg.States = []nodes.StateSource{browserState{&pages}}
				}
				agent, err := nodes.NewAgent(cfg)
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
		})
	}
}
