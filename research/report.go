package research

import (
	"slices"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/search"
)

// Report is the outcome of a run.
type Report struct {
	Question string `json:"question"`
	// Answer is the answer in Markdown; its citations are numbered links
	// [n](url) into Sources.
	Answer string `json:"answer"`
	// Sources are the cited sources, numbered in order of first citation.
	Sources []citation.Source `json:"sources"`
	// Gathered counts the sources retrieved during the run.
	Gathered int `json:"sources_gathered"`
	// Dropped counts citations removed from the answer because they pointed
	// to nothing gathered in this run.
	Dropped int      `json:"dropped_citations"`
	Queries []string `json:"queries"`
	Loops   int      `json:"loops"`
	// Backend is the web research back end that ran.
	Backend string `json:"backend"`
	// Usage is what answering this question spent, per role (not the
	// earlier questions of its thread): failed calls included, those of
	// attempts that were retried and of a step that failed the run.
	Usage   llm.UsageByRole `json:"usage"`
	Timings Timings         `json:"timings"`
	// Warnings say how the run degraded without failing, summed per kind:
	// pages it could not read, searches that found nothing, corpus files
	// it could not search — and WarningSnippetsOnly when no page could be
	// read at all, so the answer rests on search snippets only.
	Warnings []Warning `json:"warnings"`
	// Incomplete is set when the run stopped before its answer: the report
	// is then built from the research gathered so far.
	Incomplete bool `json:"incomplete,omitempty"`
	// Review is the review the run waits on, when it paused for one.
	Review *ReviewRequest `json:"review,omitempty"`
}

// newReport builds the report of state s; failed says the run stopped
// before its answer.
func (r *Researcher) newReport(question string, s State, failed bool) *Report {
	rep := &Report{
		Question: question, Answer: s.Answer, Sources: s.Cited, Gathered: countURLs(finishSources(r.cfg.Backend, s.Gathered())),
		Dropped: s.Dropped, Queries: s.Queries, Loops: s.Loops, Backend: r.cfg.Backend.Name(), Usage: s.Usage,
		Warnings: runWarnings(r.cfg.Backend, s.Findings),
	}
	if rep.Queries == nil {
		rep.Queries = []string{}
	}
	if rep.Sources == nil {
		rep.Sources = []citation.Source{}
	}
	if failed && s.Answer == "" {
		// Build what we can from the findings: their summaries, with their
		// citations resolved like a final answer's.
		rep.Incomplete = true
		res := citation.Finalize(summaries(s.Findings, "\n\n"), finishSources(r.cfg.Backend, s.Gathered()))
		rep.Answer, rep.Sources, rep.Dropped = res.Text, res.Sources, res.Dropped
		if rep.Sources == nil {
			rep.Sources = []citation.Source{}
		}
	}
	return rep
}

// ReportFrom is the report of a run's state: the State of the last event
// of Stream (graph.EventEnd) gives the report Run would return, but for
// its Timings, which only Run measures (they stay zero). A state without
// an answer — a step's, or the last of a run that stopped — gives a report
// marked Incomplete, built from the findings so far.
func (r *Researcher) ReportFrom(s State) *Report {
	return r.newReport(lastQuestion(s.Messages), s, s.Answer == "")
}

// runWarnings sums up the warnings of the back end and of the findings,
// and adds WarningSnippetsOnly when no page could be read at all.
func runWarnings(b Backend, fs []Finding) []Warning {
	var all []Warning
	if w, ok := b.(Warner); ok {
		all = append(all, w.Warnings()...)
	}
	read, sourced := false, false
	for _, f := range fs {
		all = append(all, f.Warnings...)
		if len(f.Sources) > 0 {
			sourced = true
			read = read || !f.SnippetsOnly
		}
	}
	out := sumWarnings(all)
	if sourced && !read {
		out = append(out, Warning{Kind: WarningSnippetsOnly, Message: warningText(WarningSnippetsOnly, 0)})
	}
	if out == nil {
		out = []Warning{}
	}
	return out
}

// SnippetsOnly reports whether no page of the run could be read, so that
// the answer rests on search snippets only (WarningSnippetsOnly).
func (r *Report) SnippetsOnly() bool {
	return slices.ContainsFunc(r.Warnings, func(w Warning) bool { return w.Kind == WarningSnippetsOnly })
}

// countURLs counts the pages among srcs, each once whatever its spelling.
func countURLs(srcs []citation.Source) int {
	seen := make(map[string]bool, len(srcs))
	for _, s := range srcs {
		seen[search.PageKey(s.URL)] = true
	}
	return len(seen)
}

// Markdown renders the report: the answer, then a numbered, deduplicated
// Sources list. An incomplete report says so at the top.
func (r *Report) Markdown() string {
	var b strings.Builder
	switch {
	case r.Review != nil:
		b.WriteString("> **Waiting for review.** The research paused before searching; below is what was gathered so far.\n\n")
	case r.Incomplete:
		b.WriteString("> **Incomplete report.** The research stopped before the final answer; below is what was gathered.\n\n")
	}
	if r.SnippetsOnly() {
		b.WriteString("> **Based on search snippets only.** No page could be read, so this rests on the short excerpts the search returned; check the sources before relying on it.\n\n")
	}
	answer := strings.TrimSpace(r.Answer)
	if answer == "" {
		answer = "_No findings were gathered._"
	}
	b.WriteString(answer)
	b.WriteString("\n")
	if list := citation.SourcesList(r.Sources); list != "" {
		b.WriteString("\n")
		b.WriteString(list)
	}
	return b.String()
}

// Timings is where a run's time went.
type Timings struct {
	Total time.Duration `json:"total_ns"`
	// Steps are the graph nodes in the order they first ran, with the
	// wall-clock time from their first task's start to their last task's end
	// and the number of tasks.
	Steps []StepTiming `json:"steps"`
}

// StepTiming is the time one node took over a run.
type StepTiming struct {
	Node     string        `json:"node"`
	Tasks    int           `json:"tasks"`
	Duration time.Duration `json:"duration_ns"`
}

type timer struct {
	start time.Time
	order []string
	first map[string]time.Time
	total map[string]time.Duration
	open  map[string]time.Time // per node: start of its current step
	tasks map[string]int
}

func newTimer(start time.Time) *timer {
	return &timer{start: start, first: map[string]time.Time{}, total: map[string]time.Duration{}, open: map[string]time.Time{}, tasks: map[string]int{}}
}

func (t *timer) observe(ev graph.Event[State]) {
	now := time.Now()
	switch ev.Kind {
	case graph.EventTaskStart:
		if _, ok := t.first[ev.Node]; !ok {
			t.first[ev.Node] = now
			t.order = append(t.order, ev.Node)
		}
		if _, ok := t.open[ev.Node]; !ok {
			t.open[ev.Node] = now
		}
		t.tasks[ev.Node]++
	case graph.EventStep:
		for node, began := range t.open {
			t.total[node] += now.Sub(began)
			delete(t.open, node)
		}
	}
}

func (t *timer) timings(end time.Time) Timings {
	for node, began := range t.open {
		t.total[node] += end.Sub(began)
	}
	out := Timings{Total: end.Sub(t.start), Steps: []StepTiming{}}
	for _, n := range t.order {
		out.Steps = append(out.Steps, StepTiming{Node: n, Tasks: t.tasks[n], Duration: t.total[n]})
	}
	return out
}

// ActivityKind names a timeline entry.
type ActivityKind string

// The kinds of Activity.
const (
	ActivityGenerating ActivityKind = "generating_queries" // query generation began
	ActivityQueries    ActivityKind = "queries"            // Queries were generated
	ActivitySearching  ActivityKind = "searching"          // research on Query began
	ActivitySearched   ActivityKind = "searched"           // research on Query gathered Sources
	ActivityReflecting ActivityKind = "reflecting"
	ActivityReflected  ActivityKind = "reflected" // Reflection, after Loop reflections
	ActivityFinalizing ActivityKind = "finalizing"
	ActivityAnswered   ActivityKind = "answered" // Cited sources, Dropped citations
	ActivityToken      ActivityKind = "token"    // a piece of the streamed answer
	ActivityFailed     ActivityKind = "failed"   // Node failed with Error
	ActivityReview     ActivityKind = "review"   // the run waits for a person to review Queries
	ActivityWarning    ActivityKind = "warning"  // the run degraded but goes on: Warning
)

// Activity is one entry of a run's timeline, derived from a graph event.
type Activity struct {
	Kind       ActivityKind        `json:"kind"`
	Node       string              `json:"node"`
	Step       int                 `json:"step"`
	Queries    []string            `json:"queries,omitempty"`
	Query      string              `json:"query,omitempty"`
	Sources    int                 `json:"sources,omitempty"`
	Labels     []string            `json:"labels,omitempty"` // a few source labels
	Reflection *schemas.Reflection `json:"reflection,omitempty"`
	Loop       int                 `json:"loop,omitempty"`
	Cited      int                 `json:"cited,omitempty"`
	Dropped    int                 `json:"dropped,omitempty"`
	Token      string              `json:"token,omitempty"`
	// Restart (with ActivityToken) says the node's streamed text broke off
	// and is being written again: drop what was shown of it.
	Restart bool     `json:"restart,omitempty"`
	Error   string   `json:"error,omitempty"`
	Warning *Warning `json:"warning,omitempty"`
	// Usage is what the step's task spent.
	Usage llm.UsageByRole `json:"usage,omitempty"`
}

// Describe turns a graph event of the deep-search graph into a timeline
// activity; false for events that are not worth showing.
func Describe(ev graph.Event[State]) (Activity, bool) {
	a := Activity{Node: ev.Node, Step: ev.Step}
	switch ev.Kind {
	case graph.EventTaskStart:
		switch ev.Node {
		case NodeGenerateQuery:
			a.Kind = ActivityGenerating
		case NodeWebResearch:
			a.Kind = ActivitySearching
			if t, ok := ev.Arg.(Task); ok {
				a.Query = t.Query
			}
		case NodeReflection:
			a.Kind = ActivityReflecting
		case NodeFinalizeAnswer:
			a.Kind = ActivityFinalizing
		default:
			return a, false
		}
		return a, true
	case graph.EventTaskEnd:
		a.Usage, _ = fUsage.Written(ev.Update)
		if ev.Err != nil {
			a.Kind, a.Error = ActivityFailed, ev.Err.Error()
			return a, true
		}
		switch ev.Node {
		case NodeGenerateQuery:
			a.Kind = ActivityQueries
			a.Queries, _ = fQueries.Written(ev.Update)
		case NodeWebResearch:
			a.Kind = ActivitySearched
			if fs, _ := fFindings.Written(ev.Update); len(fs) > 0 {
				a.Query = fs[0].Query
				a.Sources = countURLs(fs[0].Sources)
				a.Labels = labels(fs[0].Sources, 3)
			}
		case NodeReflection:
			a.Kind = ActivityReflected
			if r, ok := fReflection.Written(ev.Update); ok {
				a.Reflection = &r
			}
			a.Loop, _ = fLoops.Written(ev.Update)
			a.Queries, _ = fPending.Written(ev.Update)
		case NodeReviewQueries:
			a.Kind = ActivityQueries
			a.Queries, _ = fQueries.Written(ev.Update)
			if pending, followUp := fPending.Written(ev.Update); followUp {
				a.Queries = pending
			}
		case NodeFinalizeAnswer:
			a.Kind = ActivityAnswered
			cited, _ := fCited.Written(ev.Update)
			a.Cited = len(cited)
			a.Dropped, _ = fDropped.Written(ev.Update)
		default:
			return a, false
		}
		return a, true
	case graph.EventInterrupt:
		if req := pendingReview(ev.Interrupts); req != nil {
			a.Kind, a.Node, a.Queries, a.Loop = ActivityReview, NodeReviewQueries, req.Queries, req.Loop
			return a, true
		}
	case graph.EventCustom:
		switch v := ev.Value.(type) {
		case llm.Token:
			if v.Restart {
				a.Kind, a.Restart = ActivityToken, true
				return a, true
			}
			if v.Content != "" {
				a.Kind, a.Token = ActivityToken, v.Content
				return a, true
			}
		case Warning:
			a.Kind, a.Warning = ActivityWarning, &v
			return a, true
		}
	}
	return a, false
}

func labels(srcs []citation.Source, n int) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range srcs {
		if s.Label == "" || seen[s.Label] {
			continue
		}
		seen[s.Label] = true
		out = append(out, s.Label)
		if len(out) == n {
			break
		}
	}
	return out
}
