package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
)

// timeline turns research activities into stderr lines, each with the
// elapsed time and the tokens spent so far:
//
//	[  0.0s      0 tok] Generating search queries
//	[  1.2s    812 tok] Queries: "euro 2024 winner" · "euro 2024 top scorer"
//	[  4.9s  5.3k tok] Searched "euro 2024 winner": 6 sources (uefa, wikipedia, bbc)
//	[  7.0s  7.9k tok] Reflection 1: sufficient
//	[  7.0s  7.9k tok] Finalizing the answer
//	[  9.8s  9.1k tok] Warning: "euro 2024 winner": 1 page could not be read; …
//	[ 10.4s 11.2k tok] Answer: 5 sources cited, 0 citations dropped
type timeline struct {
	c     *console
	start time.Time
	usage llm.UsageByRole
	base  int // tokens spent before this process (a resumed run)
	now   func() time.Time
}

func newTimeline(c *console, start time.Time) *timeline {
	return &timeline{c: c, start: start, now: time.Now}
}

// header says which back end and models run.
func (t *timeline) header(plan app.Plan, models *app.Models) {
	t.line(researching(plan, models))
}

// researching says which back end and models run: "Researching the web
// with searxng using openai:gpt-4.1-mini".
func researching(plan app.Plan, models *app.Models) string {
	var b strings.Builder
	switch plan.Kind {
	case app.BackendCorpus:
		fmt.Fprintf(&b, "Researching the corpus %s", plan.Corpus)
	case app.BackendSearch:
		fmt.Fprintf(&b, "Researching the web with %s", strings.Join(plan.Providers, ", "))
	case app.BackendGemini:
		b.WriteString("Researching the web with Gemini's Google Search grounding")
	}
	fmt.Fprintf(&b, " using %s", modelList(models.Specs()))
	return b.String()
}

// modelList lists the distinct model specs of models, in the order of the
// research roles: "openai:gpt-4.1-mini, openai:gpt-4.1".
func modelList(models map[string]string) string {
	seen := map[string]bool{}
	var list []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			list = append(list, s)
		}
	}
	for _, role := range app.Roles {
		add(models[role])
	}
	var rest []string
	for role := range models {
		rest = append(rest, role)
	}
	slices.Sort(rest)
	for _, role := range rest {
		add(models[role])
	}
	return strings.Join(list, ", ")
}

func (t *timeline) line(msg string) {
	tot := t.usage.Total()
	t.c.line(fmt.Sprintf("[%5.1fs %6s tok] %s", t.now().Sub(t.start).Seconds(), compact(t.base+tokens(tot.Usage)), msg))
}

// observe is research.Observe's callback.
func (t *timeline) observe(a research.Activity) {
	t.usage = t.usage.Merge(a.Usage)
	switch a.Kind {
	case research.ActivityGenerating:
		t.c.setStatus("generating search queries")
	case research.ActivityQueries:
		t.c.setStatus("researching " + strconv.Itoa(len(a.Queries)) + " queries")
	case research.ActivitySearching:
		t.c.setStatus("researching " + strconv.Quote(oneLine(a.Query, 50)))
	case research.ActivityReflecting:
		t.c.setStatus("reflecting on the findings")
	case research.ActivityFinalizing:
		t.c.setStatus("writing the answer")
	}
	if line := app.ActivityLine(a); line != "" {
		t.line(line)
	}
}

// summary prints the final line: elapsed, tokens, calls, sources cited,
// citations dropped, warnings, the cost (app.CostText; "" leaves it out); and, also when quiet, a warning when no
// page could be read.
func (t *timeline) summary(rep *research.Report, runErr error, cost string) {
	tot := rep.Usage.Total()
	state := "Done"
	switch {
	case rep.Review != nil:
		state = "Paused for review"
	case rep.Incomplete || runErr != nil:
		state = "Stopped (incomplete)"
	}
	msg := fmt.Sprintf("%s in %.1fs · %s tokens · %s · %s cited · %s dropped", state, rep.Timings.Total.Seconds(),
		thousands(tokens(tot.Usage)), plural(tot.Calls, "LLM call", "LLM calls"),
		plural(len(rep.Sources), "source", "sources"), plural(rep.Dropped, "citation", "citations"))
	if c := cachedText(tot.Usage); c != "" {
		msg = strings.Replace(msg, " tokens · ", " tokens ("+c+") · ", 1)
	}
	if n := len(rep.Warnings); n > 0 {
		msg += " · " + plural(n, "warning", "warnings")
	}
	if cost != "" {
		msg += " · " + cost
	}
	t.c.line(msg)
	// An answer that rests on no page at all is said even with --quiet.
	for _, w := range rep.Warnings {
		if w.Kind == research.WarningSnippetsOnly {
			t.c.errorLine("warning: " + oneLine(w.Message, 300))
		}
	}
}

func tokens(u llm.Usage) int { return app.Tokens(u) }

// cachedText says how much of the input was read from the provider's prompt
// cache: "1,200 cached, 64%"; "" when none was.
func cachedText(u llm.Usage) string {
	if u.CachedTokens <= 0 || u.PromptTokens <= 0 {
		return ""
	}
	return fmt.Sprintf("%s cached, %d%%", thousands(u.CachedTokens), u.CachedTokens*100/u.PromptTokens)
}

func plural(n int, one, many string) string { return app.Plural(n, one, many) }

// compact writes a token count in a few characters: 812, 5.3k, 1.2M.
func compact(n int) string {
	switch {
	case n < 1000:
		return strconv.Itoa(n)
	case n < 1_000_000:
		return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(float64(n)/1_000_000, 'f', 1, 64) + "M"
}

// thousands writes n with comma separators: 12,345.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
