package research_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// cachingModel is an OpenAI-compatible chat server that honours prompt
// caching as OpenAI documents it for every model (no opt-in): a request
// reads from the cache the longest prefix it shares with an earlier
// request's prompt, in steps of 128 tokens, once that prefix is 1,024
// tokens or more. The prompt is the response format, then each message's
// role and content, in order; a token is 4 bytes of it. It reports
// prompt_tokens and prompt_tokens_details.cached_tokens so.
//
// It scripts a research run that uses every loop: fresh queries and
// follow-ups, a summary of ~1,500 characters citing the sources, notes of
// ~300 characters when findings are condensed, a short answer.
type cachingModel struct {
	f       *fakeServices
	mu      sync.Mutex
	prompts []string
}

func (c *cachingModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ResponseFormat json.RawMessage `json:"response_format"`
		Messages       []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Stream bool `json:"stream"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var prompt strings.Builder
	prompt.Write(req.ResponseFormat)
	for _, m := range req.Messages {
		fmt.Fprintf(&prompt, "\x00%s\x00%s", m.Role, m.Content)
	}
	tokens, cached := prompt.Len()/4, c.cached(prompt.String())/4
	if cached < 1024 {
		cached = 0
	}
	cached = cached / 128 * 128

	last := req.Messages[len(req.Messages)-1].Content
	format := strings.ToLower(string(req.ResponseFormat))
	var content string
	switch {
	case strings.Contains(format, "reflection"):
		content = benchJSON(schemas.Reflection{KnowledgeGap: "more", FollowUpQueries: c.f.queries(20)})
	case strings.Contains(format, "notes"): // compaction: a note per finding
		notes := make([]string, strings.Count(last, "<finding n="))
		for i := range notes {
			notes[i] = strings.Repeat("A condensed fact with its figure [S1]. ", 8)
		}
		content = benchJSON(map[string][]string{"notes": notes})
	case len(req.ResponseFormat) > 0 && string(req.ResponseFormat) != "null":
		content = benchJSON(schemas.SearchQueryList{Query: c.f.queries(20), Rationale: "r"})
	case strings.Contains(last, "well-researched answer"):
		content = "The answer [S1]."
	default:
		content = strings.Repeat("The sources agree on a figure, a name and a date [S1][S2]; one adds a detail [S3]. ", 18)
	}
	usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":100,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}`, tokens, tokens+100, cached)
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%s},\"finish_reason\":\"stop\"}]}\n\n", benchJSON(content))
		_, _ = fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"fake\",\"choices\":[],\"usage\":%s}\n\ndata: [DONE]\n\n", usage)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":"fake","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":%s}`,
		benchJSON(content), usage)
}

// cached returns the length of the longest prefix prompt shares with an
// earlier prompt, and remembers prompt.
func (c *cachingModel) cached(prompt string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	best := 0
	for _, p := range c.prompts {
		n := min(len(p), len(prompt))
		i := 0
		for i < n && p[i] == prompt[i] {
			i++
		}
		best = max(best, i)
	}
	c.prompts = append(c.prompts, prompt)
	return best
}

// BenchmarkPromptTokens reports the input tokens of one research run that
// uses every loop, with three pages read per query (pages longer than
// what a source may take of the prompt), as the CLI wires it with default
// settings, against a model server that caches prompt prefixes as OpenAI
// does: the run's input tokens, those of each role (research: the summary
// prompts), and the share read from the cache, at medium and high effort.
//
//	go test -run '^$' -bench PromptTokens -benchtime 1x ./research
func BenchmarkPromptTokens(b *testing.B) {
	for _, c := range []struct {
		effort         string
		queries, loops int
		most           int // input tokens: issue 31's bounds
		researchBudget int // research_budget, when set
	}{
		{"medium", 3, 3, 83_738, 0}, // the code before the research budget
		{"high", 5, 10, 250_000, 0},
		{"high", 5, 10, 250_000, 1000}, // the key reaches the research prompts
	} {
		name, vars := "effort="+c.effort, map[string]string{"DEEPGRAPH_EFFORT": c.effort}
		if c.researchBudget > 0 {
			name += fmt.Sprintf(",research_budget=%d", c.researchBudget)
			vars["DEEPGRAPH_RESEARCH_BUDGET"] = fmt.Sprint(c.researchBudget)
		}
		b.Run(name, func(b *testing.B) {
			f := newFakeServices(b, latencies{})
			f.pageText = strings.Repeat("A sentence of the page with a fact in it, a figure and a name. ", 160) // ~10 kB
			var model *cachingModel
			f.model.Close()
			f.model = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { model.ServeHTTP(w, r) }))
			r := openResearch(b, f, vars)
			var input, cached int
			var byRole llm.UsageByRole
			for b.Loop() {
				model = &cachingModel{f: f}
				rep, err := r.Run(context.Background(), "question")
				if err != nil {
					b.Fatal(err)
				}
				if got := len(rep.Queries); got != c.queries*c.loops {
					b.Fatalf("the run searched %d queries, want %d: the fake no longer drives every loop", got, c.queries*c.loops)
				}
				tot := rep.Usage.Total().Usage
				input, cached = tot.PromptTokens, tot.CachedTokens
				byRole = rep.Usage
			}
			if input > c.most {
				b.Errorf("a run at %s effort took %d input tokens, want at most %d (by role: %+v)", c.effort, input, c.most, byRole)
			}
			if research := byRole[llm.RoleResearch]; c.researchBudget > 0 && research.Usage.PromptTokens > research.Calls*c.researchBudget {
				b.Errorf("%d research prompts took %d input tokens, more than research_budget=%d each", research.Calls, research.Usage.PromptTokens, c.researchBudget)
			}
			b.ReportMetric(float64(input), "input-tokens/run")
			for role, u := range byRole {
				b.ReportMetric(float64(u.Usage.PromptTokens), role+"-input-tokens/run")
			}
			b.ReportMetric(100*float64(cached)/float64(input), "%cached")
		})
	}
}
