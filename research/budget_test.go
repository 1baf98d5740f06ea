package research_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/citation"
)

// A high-effort run that uses every loop, with five follow-ups per loop and
// summaries of about 9,000 characters: every reflection prompt stays
// within 40,000 characters, the answer prompt within the budget, findings
// are condensed, and every URL of the report is a source the run gathered —
// the condensed findings' sources included.
func TestContextBudgetLongRun(t *testing.T) {
	high, err := research.EffortByName("high")
	require.NoError(t, err)
	rep, m, err := fullRun(context.Background(), high, 6000, research.Config{})
	require.NoError(t, err)

	refl := m.prompts(llm.RoleReflection)
	require.Len(t, refl, high.Loops, "every loop is used")
	for i, n := range refl {
		assert.LessOrEqual(t, n, 40_000, "reflection %d's prompt", i+1)
	}
	assert.Positive(t, rep.Usage[research.RoleCompaction].Calls, "findings were condensed")
	budgetChars := research.DefaultContextBudget * research.CharsPerToken
	assert.LessOrEqual(t, m.maxChars(llm.RoleAnswer), budgetChars+3_000, "the answer prompt: the findings' budget and the prompt's own text")

	require.Len(t, m.answers, 1)
	answerPrompt := m.answers[0]
	assert.Contains(t, answerPrompt, "(condensed) ", "the answer sees condensed findings")
	// The first round's findings are condensed by now: their sources are
	// cited through the notes, and kept.
	require.NotContains(t, answerPrompt, "Fact 0 about initial query 0", "the first round's summaries are not in full")
	assert.True(t, containsURL(rep.Sources, "https://site1.example/initial-query-0"), "a condensed finding's source is cited")

	// Every URL of the report is a page the run searched: a page of one of
	// its queries.
	searched := map[string]bool{}
	for _, q := range rep.Queries {
		searched[strings.ReplaceAll(q, " ", "-")] = true
	}
	urlRE := regexp.MustCompile(`https?://[^\s)\]]+`)
	urls := urlRE.FindAllString(rep.Answer, -1)
	require.NotEmpty(t, urls)
	for _, u := range urls {
		m := regexp.MustCompile(`^https://site[1-5]\.example/(.+)$`).FindStringSubmatch(u)
		if assert.NotNil(t, m, "cited %s, not a gathered source", u) {
			assert.True(t, searched[m[1]], "cited %s, whose query was not searched", u)
		}
	}
	for _, s := range rep.Sources {
		assert.Contains(t, rep.Answer, s.URL)
	}
	assert.Equal(t, 2, rep.Dropped, "the invented short URL and link are dropped")
	assert.NotContains(t, rep.Answer, "invented.example")
}

func containsURL(sources []citation.Source, url string) bool {
	for _, s := range sources {
		if s.URL == url {
			return true
		}
	}
	return false
}

// Config.ContextBudget sets the budget: with 300 tokens a medium run's
// answer sees at most 1,200 characters of findings, the reflection a third,
// and even the notes do not all fit.
func TestContextBudgetConfigured(t *testing.T) {
	const budget = 300
	medium, err := research.EffortByName("medium")
	require.NoError(t, err)
	rep, m, err := fullRun(context.Background(), medium, 2200, research.Config{ContextBudget: budget})
	require.NoError(t, err)
	const overhead = 3_000 // the prompts' own text
	for i, n := range m.prompts(llm.RoleReflection) {
		assert.LessOrEqual(t, n, budget*research.CharsPerToken/3+overhead, "reflection %d", i+1)
	}
	assert.LessOrEqual(t, m.maxChars(llm.RoleAnswer), budget*research.CharsPerToken+overhead)
	assert.Contains(t, m.answers[0], "earlier summaries are left out", "what does not fit even condensed is left out, and said so")
	assert.NotEmpty(t, rep.Sources)
}
