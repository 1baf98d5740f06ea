package research_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/search"
)

// The research budget bounds the summary prompt: the pages' text is cut
// fairly (a short source whole, the long ones to one length), each keeps
// its start, and the labels, titles and URLs — what citations resolve
// against — are as they were.
func TestSearchBackendFitsTheResearchBudget(t *testing.T) {
	page := func(name string) string {
		return fmt.Sprintf("%s starts here. ", name) + strings.Repeat(name+" has a fact, a figure and a name. ", 200)
	}
	results := []search.Result{
		{Title: "Alpha", URL: "https://a.example/1", Snippet: "alpha snippet"},
		{Title: "Beta", URL: "https://b.example/2", Snippet: "beta snippet"},
		{Title: "Gamma", URL: "https://c.example/3", Snippet: "gamma snippet"},
		{Title: "Delta", URL: "https://d.example/4", Content: "Delta is short and stays whole."},
		{Title: "Epsilon", URL: "https://e.example/5", Snippet: "epsilon snippet, never read"},
	}
	reader := &fakeReader{pages: map[string]string{
		"https://a.example/1": page("Alpha"), "https://b.example/2": page("Beta"), "https://c.example/3": page("Gamma"),
	}}
	summary := fake.Text("Alpha has a fact [S1]; Delta is short [S4].").When(fake.Contains("Summarise what the sources"))

	for _, budget := range []int{0, 4000, 1500, 1000} {
		t.Run(fmt.Sprintf("budget=%d", budget), func(t *testing.T) {
			m := fake.New(summary)
			b := &research.SearchBackend{Searcher: fakeSearcher{results: map[string][]search.Result{"q": results}}, Reader: reader}
			f, err := b.Research(context.Background(), m, research.Query{Text: "q", Topic: "the question", Date: "today", Budget: budget})
			require.NoError(t, err)
			require.Len(t, m.Calls(), 1)
			prompt := m.Calls()[0].LastMessage().Content

			if budget > 0 {
				assert.LessOrEqual(t, len(prompt), budget*research.CharsPerToken, "the prompt is within its budget")
			} else {
				assert.Contains(t, prompt, page("Alpha")[:research.DefaultMaxSourceChars], "no budget: each page up to MaxSourceChars")
			}
			for i, r := range results {
				assert.Contains(t, prompt, fmt.Sprintf("<source label=\"S%d\" title=%q url=%q>", i+1, r.Title, r.URL), "labels, titles and URLs are kept")
			}
			assert.Contains(t, prompt, "Delta is short and stays whole.\n</source>", "a short source is not cut")
			assert.Contains(t, prompt, "epsilon snippet, never read\n</source>")
			var cut []int
			for _, name := range []string{"Alpha", "Beta", "Gamma"} {
				text := sourceText(t, prompt, name)
				assert.True(t, strings.HasPrefix(text, name+" starts here."), "%s keeps its start", name)
				assert.True(t, strings.HasSuffix(text, "… [truncated]") || strings.HasSuffix(text, " …[truncated]"), "%s says it was cut: %q", name, text[max(len(text)-40, 0):])
				assert.NotContains(t, text, "[truncated] ", "%s is cut once", name)
				cut = append(cut, len(text))
			}
			assert.InDelta(t, cut[0], cut[1], 40, "the long pages are cut to about the same length")
			assert.InDelta(t, cut[0], cut[2], 40, "the long pages are cut to about the same length")

			// The citations still resolve against every source.
			require.Len(t, f.Sources, len(results))
			for i, r := range results {
				assert.Equal(t, r.URL, f.Sources[i].URL)
			}
			assert.Contains(t, f.Summary, "("+f.Sources[0].ShortURL+")")
			assert.Contains(t, f.Summary, "("+f.Sources[3].ShortURL+")")
		})
	}
}

// sourceText is the text of the source titled title in a summary prompt.
func sourceText(t *testing.T, prompt, title string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<source label="S\d+" title="` + title + `" url="[^"]*">\n(.*?)\n</source>`).FindStringSubmatch(prompt)
	require.NotNil(t, m, "source %s in the prompt", title)
	return m[1]
}

// budgetBackend records the budget of each query it researches.
type budgetBackend struct {
	mu      sync.Mutex
	budgets []int
}

func (b *budgetBackend) Name() string { return "budget" }

func (b *budgetBackend) Research(_ context.Context, _ llm.Model, q research.Query) (research.Finding, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.budgets = append(b.budgets, q.Budget)
	return research.Finding{Summary: "s"}, nil
}

// Each research prompt's budget comes from the run's queries and loops —
// the effort, also when a run chooses its own — unless Config sets it.
func TestResearchBudgetPerRun(t *testing.T) {
	assert.Equal(t, 4000, research.ResearchBudgetFor(1, 1), "low")
	assert.Equal(t, 4000, research.ResearchBudgetFor(3, 3), "medium")
	assert.Equal(t, 1500, research.ResearchBudgetFor(5, 10), "high")
	assert.Equal(t, 1000, research.ResearchBudgetFor(10, 50), "never below the least")
	assert.Equal(t, 4000, research.ResearchBudgetFor(0, 0), "zero counts as one")
	for _, e := range research.Efforts() {
		b := research.ResearchBudgetFor(e.Queries, e.Loops)
		assert.LessOrEqual(t, b*e.Queries*e.Loops, research.RunResearchBudget, "%s: a run's research prompts stay within RunResearchBudget", e.Name)
	}

	for _, c := range []struct {
		name string
		cfg  research.Config
		opts []research.RunOption
		want int
	}{
		{"default limits (3 queries, 2 loops)", research.Config{}, nil, 4000},
		{"high effort for one run", research.Config{}, []research.RunOption{research.InitialQueries(5), research.MaxLoops(10)}, 1500},
		{"configured", research.Config{ResearchBudget: 2500}, []research.RunOption{research.InitialQueries(5), research.MaxLoops(10)}, 2500},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &budgetBackend{}
			m := fake.New(queries("a", "b"), reflection(false, "gap", "c"), reflection(true, ""), fake.Text("answer"))
			_, err := newResearcher(t, m, b, c.cfg).Run(context.Background(), "question", c.opts...)
			require.NoError(t, err)
			require.Len(t, b.budgets, 3, "both rounds")
			for _, got := range b.budgets {
				assert.Equal(t, c.want, got)
			}
		})
	}
}
