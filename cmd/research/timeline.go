package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	mu    sync.Mutex // usage and base, also read by log lines' stamps
	usage llm.UsageByRole
	base  int       // tokens spent before this process (a resumed run)
	began time.Time // when a resumed run first started (zero for a new one)
	now   func() time.Time
}

// newTimeline starts a timeline at start; the console's log lines carry its
// stamp from now on.
func newTimeline(c *console, start time.Time) *timeline {
	t := &timeline{c: c, start: start, now: time.Now}
	c.setStamp(t.stamp)
	return t
}

// stamp is the start of a timeline line: "[  1.2s    812 tok] ".
func (t *timeline) stamp() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	tot := t.usage.Total()
	return fmt.Sprintf("[%5.1fs %6s tok] ", t.now().Sub(t.start).Seconds(), compact(t.base+tokens(tot.Usage)))
}

// setBase records what a resumed run spent before this process.
func (t *timeline) setBase(tokens int) {
	t.mu.Lock()
	t.base = tokens
	t.mu.Unlock()
}

// spent is the tokens spent so far, the base included, and this process's
// usage.
func (t *timeline) spent() (int, llm.UsageByRole) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.base + tokens(t.usage.Total().Usage), t.usage
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
	t.c.line(t.stamp() + msg)
}

// observe is research.Observe's callback.
func (t *timeline) observe(a research.Activity) {
	t.mu.Lock()
	t.usage = t.usage.Merge(a.Usage)
	t.mu.Unlock()
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

// summary prints the final line: how the run ended and after how long
// (the wall-clock time of this command, waits for a review included; and
// for a resumed run, since when it began), tokens, calls, sources — cited,
// or gathered for a run paused before its answer — citations dropped,
// warnings, the cost (app.CostText; "" leaves it out); and, also when
// quiet, a warning when no page could be read.
func (t *timeline) summary(rep *research.Report, runErr error, cost string) {
	tot := rep.Usage.Total()
	elapsed := fmt.Sprintf("%.1fs", t.now().Sub(t.start).Seconds())
	spent := thousands(tokens(tot.Usage)) + " tokens"
	if c := cachedText(tot.Usage); c != "" {
		spent += " (" + c + ")"
	}
	parts := []string{"", spent, plural(tot.Calls, "LLM call", "LLM calls")}
	switch {
	case rep.Review != nil:
		parts[0] = "Paused for review in " + elapsed
		parts = append(parts, plural(rep.Gathered, "source", "sources")+" gathered so far")
	default:
		parts[0] = "Done in " + elapsed
		if rep.Incomplete || runErr != nil {
			parts[0] = "Stopped (incomplete) in " + elapsed
		}
		if len(rep.Sources) == 0 {
			parts = append(parts, "no source cited")
		} else {
			parts = append(parts, plural(len(rep.Sources), "source", "sources")+" cited")
		}
		parts = append(parts, plural(rep.Dropped, "citation", "citations")+" dropped")
	}
	if n := len(rep.Warnings); n > 0 {
		parts = append(parts, plural(n, "warning", "warnings"))
	}
	if cost != "" {
		parts = append(parts, cost)
	}
	if !t.began.IsZero() {
		parts = append(parts, "resumed (the run began "+ago(t.now().Sub(t.began))+")")
	}
	t.c.line(strings.Join(parts, " · "))
	// An answer that rests on no page at all is said even with --quiet.
	for _, w := range rep.Warnings {
		if w.Kind == research.WarningSnippetsOnly {
			msg := "warning: " + oneLine(w.Message, 300)
			if refused(rep) {
				msg += " (some were refused: " + app.AllowPrivateHint + ")"
			}
			t.c.errorLine(msg)
		}
	}
}

// refused reports whether the network guard refused pages of the run.
func refused(rep *research.Report) bool {
	return slices.ContainsFunc(rep.Warnings, func(w research.Warning) bool { return w.Kind == research.WarningPagesRefused })
}

// ago writes a duration roughly: "40s ago", "12m ago", "3h ago", "2d ago".
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.0fs ago", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%.0fm ago", d.Minutes())
	case d < 48*time.Hour:
		return fmt.Sprintf("%.0fh ago", d.Hours())
	}
	return fmt.Sprintf("%.0fd ago", d.Hours()/24)
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
