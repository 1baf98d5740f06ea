package research_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/search"
)

// promptModel plays every role of a run that uses every loop: it writes
// queries, summaries of summaryChars characters citing each source by
// label, reflections that always ask for queries new follow-ups, digests
// that keep the markers they are given, and an answer that cites every
// marker of its prompt plus an invented one. It counts the prompt
// characters of each call by role and reports them as prompt tokens at 4
// characters a token, so a Report's Usage says what each role read.
type promptModel struct {
	queries      int
	summaryChars int

	mu      sync.Mutex
	round   int
	chars   map[string][]int // prompt characters of each call, by role
	answers []string         // prompts of the answer calls
}

func newPromptModel(queries, summaryChars int) *promptModel {
	return &promptModel{queries: queries, summaryChars: summaryChars, chars: map[string][]int{}}
}

var markerRE = regexp.MustCompile(`\[[^\]\n]*\]\(https://vertexaisearch\.cloud\.google\.com/id/[0-9]+-[0-9]+\)`)

func (m *promptModel) Generate(ctx context.Context, msgs []schemas.Message, opts ...llm.Option) (*llm.Response, error) {
	req := llm.NewRequest(opts...)
	var prompt strings.Builder
	for _, msg := range msgs {
		prompt.WriteString(msg.Content)
	}
	p := prompt.String()
	var role, out string
	switch {
	case req.SchemaName == "SearchQueryList":
		role = llm.RoleQuery
		qs := make([]string, m.queries)
		for i := range qs {
			qs[i] = fmt.Sprintf("initial query %d", i)
		}
		out = mustJSON(schemas.SearchQueryList{Query: qs, Rationale: "aspects"})
	case req.SchemaName == "Reflection":
		role = llm.RoleReflection
		m.mu.Lock()
		m.round++
		round := m.round
		m.mu.Unlock()
		qs := make([]string, m.queries)
		for i := range qs {
			qs[i] = fmt.Sprintf("follow-up %d of round %d", i, round)
		}
		out = mustJSON(schemas.Reflection{IsSufficient: false, KnowledgeGap: fmt.Sprintf("gap of round %d", round), FollowUpQueries: qs})
	case strings.Contains(p, "Summarise what the sources below say"):
		role = llm.RoleResearch
		q := p[strings.Index(p, `search query "`)+len(`search query "`):]
		q = q[:strings.IndexByte(q, '"')]
		var b strings.Builder
		for i := 0; b.Len() < m.summaryChars; i++ {
			fmt.Fprintf(&b, "Fact %d about %s is stated by a source, with figures and context that make it a long sentence [S%d]. ", i, q, i%5+1)
		}
		out = b.String()
	case strings.Contains(p, "well-researched answer"):
		role = llm.RoleAnswer
		m.mu.Lock()
		m.answers = append(m.answers, p)
		m.mu.Unlock()
		var b strings.Builder
		for _, mk := range uniq(markerRE.FindAllString(p, -1)) {
			fmt.Fprintf(&b, "A claim%s.\n", " "+mk)
		}
		b.WriteString("An invented claim [x](https://vertexaisearch.cloud.google.com/id/999-9) and [y](https://invented.example/page).\n")
		out = b.String()
	case req.SchemaName == "compactNotes":
		role = research.RoleCompaction
		// A note per finding: a short sentence for each of its first two
		// markers.
		var notes []string
		for _, f := range strings.Split(p, "<finding n=")[1:] {
			var b strings.Builder
			for _, mk := range uniq(markerRE.FindAllString(f, -1))[:2] {
				fmt.Fprintf(&b, "A condensed fact%s. ", " "+mk)
			}
			notes = append(notes, b.String())
		}
		out = mustJSON(map[string][]string{"notes": notes})
	default:
		return nil, fmt.Errorf("promptModel: unexpected prompt %.200q", p)
	}
	m.mu.Lock()
	m.chars[role] = append(m.chars[role], len(p))
	m.mu.Unlock()
	u := llm.Usage{PromptTokens: (len(p) + 3) / 4, CompletionTokens: (len(out) + 3) / 4}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	if req.OnDelta != nil {
		req.OnDelta(llm.Delta{Content: out})
	}
	return &llm.Response{Content: out, FinishReason: llm.FinishStop, Usage: u}, nil
}

// maxChars is the longest prompt of role, in characters.
func (m *promptModel) maxChars(role string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.chars[role]) == 0 {
		return 0
	}
	return slices.Max(m.chars[role])
}

func (m *promptModel) prompts(role string) []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.chars[role])
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// pagesSearcher returns five results per query, each with a snippet of
// snippetChars characters, on pages named after the query.
type pagesSearcher struct{ snippetChars int }

func (pagesSearcher) Name() string { return "pages" }

func (s pagesSearcher) Search(_ context.Context, q string, _ search.Options) ([]search.Result, error) {
	slug := strings.ReplaceAll(q, " ", "-")
	out := make([]search.Result, 5)
	for i := range out {
		out[i] = search.Result{Title: fmt.Sprintf("Page %d on %s", i+1, q), URL: fmt.Sprintf("https://site%d.example/%s", i+1, slug),
			Snippet: strings.Repeat("snippet text ", s.snippetChars/13)}
	}
	return out, nil
}

// fullRun runs effort e with every loop used against promptModel and
// pagesSearcher.
func fullRun(ctx context.Context, e research.Effort, summaryChars int, cfg research.Config) (*research.Report, *promptModel, error) {
	m := newPromptModel(e.Queries, summaryChars)
	cfg.QueryModel = m
	cfg.Backend = &research.SearchBackend{Searcher: pagesSearcher{snippetChars: 400}}
	cfg.InitialQueries, cfg.MaxLoops, cfg.Now = e.Queries, e.Loops, fixedNow
	r, err := research.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	rep, err := r.Run(ctx, "What changed in the field over the last decade?")
	return rep, m, err
}
