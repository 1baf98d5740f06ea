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

	"github.com/deepgraph/deepgraph/internal/fakeproviders"
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
// It scripts a research run that uses every loop (fakeServices.reply).
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

	var text strings.Builder // the messages' text, for the script
	for _, m := range req.Messages {
		text.WriteString(m.Content + "\n")
	}
	format := string(req.ResponseFormat)
	if format == "null" {
		format = ""
	}
	content := c.f.reply(format, text.String())
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

// reply is the scripted reply of a research run that uses every loop, to a
// call that asks for structured output described by schema ("" for text:
// the call's JSON schema or structured-output tool, which names it) with
// prompt: fresh queries and follow-ups, a summary of summarySentences
// sentences citing the sources, notes of ~300 characters when findings are
// condensed, a short answer.
func (f *fakeServices) reply(schema, prompt string) string {
	schema = strings.ToLower(schema)
	switch {
	case strings.Contains(schema, "reflection"):
		return benchJSON(schemas.Reflection{KnowledgeGap: "more", FollowUpQueries: f.queries(20)})
	case strings.Contains(schema, "notes"): // compaction: a note per finding
		notes := make([]string, strings.Count(prompt, "<finding n="))
		for i := range notes {
			notes[i] = strings.Repeat("A condensed fact with its figure [S1]. ", 8)
		}
		return benchJSON(map[string][]string{"notes": notes})
	case schema != "":
		return benchJSON(schemas.SearchQueryList{Query: f.queries(20), Rationale: "r"})
	case strings.Contains(prompt, "well-researched answer"):
		return "The answer [S1]."
	}
	n := f.summarySentences
	if n == 0 {
		n = 18
	}
	return strings.Repeat("The sources agree on a figure, a name and a date [S1][S2]; one adds a detail [S3]. ", n)
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

// anthropicModel is a Messages API server that caches prompt prefixes as
// Anthropic does (fakeproviders.AnthropicCache) and answers as the OpenAI
// one does (fakeServices.reply): structured output as a call of the
// schema's tool.
func anthropicModel(f *fakeServices, cache *fakeproviders.AnthropicCache) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := fakeproviders.ReadAnthropicRequest(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		schema := ""
		for _, t := range req.Tools {
			schema += t.Name
		}
		content := fakeproviders.AnthropicText(f.reply(schema, req.Prompt()))
		if schema != "" {
			var input map[string]any
			if err := json.Unmarshal([]byte(f.reply(schema, req.Prompt())), &input); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			content = fakeproviders.AnthropicToolUse("toolu_1", req.Tools[len(req.Tools)-1].Name, input)
		}
		fakeproviders.WriteAnthropicMessage(w, req.Stream, []map[string]any{content}, cache.Use(req.Body, 100))
	}
}

// BenchmarkAnthropicPromptCache runs the research graph on Anthropic
// (claude-sonnet-4-5, wired as the CLI does with default settings) against
// a Messages API fake that caches prompt prefixes as Anthropic does, with
// every loop used and three pages read per query, and reports per run the
// input tokens, those read from and written to the cache, the share read
// from it, and the cost at claude-sonnet-4-5's prices — with the cache,
// and for the same tokens without it. Summaries of 18 sentences (~4,600
// characters once their markers are links) exceed the reflection's budget
// from the second round on at high effort, so that the reflections stop
// being cached (see the package doc); summaries of 6 sentences (~1,500)
// fit for more rounds.
//
//	go test -run '^$' -bench AnthropicPromptCache -benchtime 1x ./research
func BenchmarkAnthropicPromptCache(b *testing.B) {
	price, _ := llm.PriceFor("anthropic:claude-sonnet-4-5")
	for _, c := range []struct {
		effort         string
		queries, loops int
		sentences      int
	}{{"medium", 3, 3, 18}, {"high", 5, 10, 18}, {"medium", 3, 3, 6}, {"high", 5, 10, 6}} {
		b.Run(fmt.Sprintf("effort=%s,summary=%d", c.effort, c.sentences), func(b *testing.B) {
			f := newFakeServices(b, latencies{})
			f.summarySentences = c.sentences
			f.pageText = strings.Repeat("A sentence of the page with a fact in it, a figure and a name. ", 160) // ~10 kB
			var cache *fakeproviders.AnthropicCache
			f.model.Close()
			f.model = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { anthropicModel(f, cache)(w, r) }))
			r := openResearch(b, f, map[string]string{"DEEPGRAPH_EFFORT": c.effort, "DEEPGRAPH_MODEL": "anthropic:claude-sonnet-4-5",
				"ANTHROPIC_API_KEY": "sk-ant-bench-0123456789", "ANTHROPIC_BASE_URL": f.model.URL})
			var u llm.Usage
			var byRole llm.UsageByRole
			for b.Loop() {
				cache = &fakeproviders.AnthropicCache{}
				rep, err := r.Run(context.Background(), "question")
				if err != nil {
					b.Fatal(err)
				}
				if got := len(rep.Queries); got != c.queries*c.loops {
					b.Fatalf("the run searched %d queries, want %d: the fake no longer drives every loop", got, c.queries*c.loops)
				}
				u, byRole = rep.Usage.Total().Usage, rep.Usage
			}
			uncached := u
			uncached.CachedTokens, uncached.CacheWriteTokens = 0, 0
			b.ReportMetric(float64(u.PromptTokens), "input-tokens/run")
			b.ReportMetric(float64(u.CachedTokens), "cache-read-tokens/run")
			b.ReportMetric(float64(u.CacheWriteTokens), "cache-write-tokens/run")
			b.ReportMetric(100*float64(u.CachedTokens)/float64(u.PromptTokens), "%cached")
			for role, ru := range byRole {
				if ru.Usage.CachedTokens > 0 {
					b.ReportMetric(float64(ru.Usage.CachedTokens), role+"-cache-read-tokens/run")
				}
			}
			b.ReportMetric(price.Cost(u), "$/run")
			b.ReportMetric(price.Cost(uncached), "$uncached/run")
		})
	}
}
