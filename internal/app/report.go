package app

import (
	"encoding/json"
	"strings"
	"time"
	"unicode"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/research"
)

// ReportSchema names the JSON report's layout; it changes when a field is
// removed or changes meaning (adding fields does not). v2 renamed v1's
// citations_dropped to dropped_citations, the name of research.Report and
// of the agent's document.
const ReportSchema = "deepgraph.research.report/v2"

// ReportDoc is the JSON document of a research run: what research
// --format json prints, research show reads back and the server sends. Its fields
// are documented one by one in docs/report.md.
type ReportDoc struct {
	Schema string `json:"schema"`
	RunRef
	Question string `json:"question"`
	// Answer is the answer in Markdown with numbered citations [n](url).
	Answer string `json:"answer"`
	// Markdown is the whole report as research prints it without --format:
	// the answer followed by the numbered Sources list.
	Markdown string `json:"markdown"`
	// Sources are the cited sources; Number is the n of [n](url).
	Sources          []SourceDoc `json:"sources"`
	SourcesGathered  int         `json:"sources_gathered"`
	DroppedCitations int         `json:"dropped_citations"`
	Queries          []string    `json:"queries"`
	Loops            int         `json:"loops"`
	Backend          string      `json:"backend"`
	// Warnings say how the run degraded without failing (research.Warning):
	// pages refused or unreadable, searches with no results, corpus files
	// not indexed, an answer based on search snippets only.
	Warnings []WarningDoc `json:"warnings"`
	// Models is the model spec per role (query, research, reflection,
	// answer).
	Models map[string]string `json:"models"`
	// Usage is per role; UsageTotal the sum.
	Usage      map[string]UsageDoc `json:"usage"`
	UsageTotal UsageDoc            `json:"usage_total"`
	// Cost is what the model calls cost, per role and in total.
	Cost    CostDoc    `json:"cost"`
	Timings TimingsDoc `json:"timings"`
	// Incomplete is true when the run stopped before its answer
	// (interrupted, timed out, failed): Answer then holds what was gathered.
	Incomplete bool `json:"incomplete"`
	// Error is why the run stopped, when it did not finish.
	Error string `json:"error,omitempty"`
}

// UnmarshalJSON reads a report of either schema: v1's citations_dropped
// (documents stored before v2) becomes DroppedCitations.
func (d *ReportDoc) UnmarshalJSON(data []byte) error {
	type plain ReportDoc // without this method
	return readDoc(data, (*plain)(d), &d.DroppedCitations)
}

// readDoc decodes a document into doc, then sets *dropped from v1's
// citations_dropped when the document has only that name.
func readDoc(data []byte, doc any, dropped *int) error {
	if err := json.Unmarshal(data, doc); err != nil {
		return err
	}
	var old struct {
		Dropped *int `json:"citations_dropped"`
	}
	if err := json.Unmarshal(data, &old); err != nil {
		return err
	}
	if old.Dropped != nil && *dropped == 0 {
		*dropped = *old.Dropped
	}
	return nil
}

// RunRef names the run of a document, when it is kept: its id — the id
// research show, resume and --thread take; on Temporal the workflow id —
// and the thread its follow-up questions continue. Both are left out of
// the JSON when empty (a run with --no-save).
type RunRef struct {
	RunID    string `json:"run_id,omitempty"`
	ThreadID string `json:"thread_id,omitempty"`
}

// WarningDoc is a warning of a ReportDoc.
type WarningDoc struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Count   int    `json:"count,omitempty"`
	// Items are a few of the pages (URLs) or files concerned.
	Items []string `json:"items,omitempty"`
}

// SourceDoc is a cited source of a ReportDoc.
type SourceDoc struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	URL    string `json:"url"`
	Label  string `json:"label"`
}

// UsageDoc is what the model calls of a role spent.
type UsageDoc struct {
	Calls            int `json:"calls"`
	Failed           int `json:"failed"`
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CachedTokens     int `json:"cached_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens"`
	ReasoningTokens  int `json:"reasoning_tokens"`
}

// TimingsDoc is how long a run and each of its steps took.
type TimingsDoc struct {
	TotalMS float64   `json:"total_ms"`
	Steps   []StepDoc `json:"steps"`
}

// StepDoc is one step of TimingsDoc.
type StepDoc struct {
	Node  string  `json:"node"`
	Tasks int     `json:"tasks"`
	MS    float64 `json:"ms"`
}

// UsageOf turns a tally into its JSON form.
func UsageOf(t llm.Tally) UsageDoc {
	return UsageDoc{Calls: t.Calls, Failed: t.Failed, PromptTokens: t.Usage.PromptTokens, CompletionTokens: t.Usage.CompletionTokens,
		TotalTokens: Tokens(t.Usage), CachedTokens: t.Usage.CachedTokens, CacheWriteTokens: t.Usage.CacheWriteTokens,
		ReasoningTokens: t.Usage.ReasoningTokens}
}

func usageDocs(u llm.UsageByRole) map[string]UsageDoc {
	out := map[string]UsageDoc{}
	for _, role := range u.Roles() {
		out[role] = UsageOf(u[role])
	}
	return out
}

// Tokens is a call's total, or prompt + completion when the provider
// reported no total.
func Tokens(u llm.Usage) int {
	if u.TotalTokens > 0 {
		return u.TotalTokens
	}
	return u.PromptTokens + u.CompletionTokens
}

// MS is a duration in milliseconds, to the microsecond.
func MS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ResearchDoc builds the JSON document of rep, its cost at the built-in
// prices; runErr, when not nil, is why the run stopped.
func ResearchDoc(rep *research.Report, models map[string]string, runErr error) ReportDoc {
	return PricedResearchDoc(RunRef{}, rep, models, nil, runErr)
}

// PricedResearchDoc is ResearchDoc of the run named by run, with prices
// overriding the built-in ones (config's prices key).
func PricedResearchDoc(run RunRef, rep *research.Report, models map[string]string, prices llm.Prices, runErr error) ReportDoc {
	doc := ReportDoc{
		Schema: ReportSchema, RunRef: run, Question: rep.Question, Answer: CleanText(rep.Answer), Markdown: CleanText(rep.Markdown()),
		Sources: []SourceDoc{}, SourcesGathered: rep.Gathered, DroppedCitations: rep.Dropped, Queries: rep.Queries, Loops: rep.Loops,
		Backend: rep.Backend, Models: models, Usage: usageDocs(rep.Usage), UsageTotal: UsageOf(rep.Usage.Total()),
		Cost:       CostOf(rep.Usage, models, prices),
		Timings:    TimingsDoc{TotalMS: MS(rep.Timings.Total), Steps: []StepDoc{}},
		Incomplete: rep.Incomplete || runErr != nil,
	}
	if doc.Queries == nil {
		doc.Queries = []string{}
	}
	if doc.Models == nil {
		doc.Models = map[string]string{}
	}
	for i, s := range rep.Sources {
		doc.Sources = append(doc.Sources, SourceDoc{Number: i + 1, Title: s.Title, URL: s.URL, Label: s.Label})
	}
	doc.Warnings = make([]WarningDoc, len(rep.Warnings))
	for i, w := range rep.Warnings {
		doc.Warnings[i] = WarningDoc{Kind: string(w.Kind), Message: OneLine(w.Message, 0), Count: w.Count}
		for _, it := range w.Items {
			doc.Warnings[i].Items = append(doc.Warnings[i].Items, OneLine(it, 0))
		}
	}
	for _, st := range rep.Timings.Steps {
		doc.Timings.Steps = append(doc.Timings.Steps, StepDoc{Node: st.Node, Tasks: st.Tasks, MS: MS(st.Duration)})
	}
	if runErr != nil {
		doc.Incomplete, doc.Error = true, runErr.Error()
	}
	return doc
}

// ResearchDocument renders rep as the indented JSON report.
func ResearchDocument(rep *research.Report, models map[string]string, runErr error) ([]byte, error) {
	return PricedResearchDocument(RunRef{}, rep, models, nil, runErr)
}

// PricedResearchDocument is ResearchDocument of the run named by run, with
// prices overriding the built-in ones.
func PricedResearchDocument(run RunRef, rep *research.Report, models map[string]string, prices llm.Prices, runErr error) ([]byte, error) {
	return json.MarshalIndent(PricedResearchDoc(run, rep, models, prices, runErr), "", "  ")
}

// AgentResultSchema names the JSON document of an agent run; v2 renamed
// v1's citations_dropped to dropped_citations.
const AgentResultSchema = "deepgraph.agent.result/v2"

// AgentDoc is the JSON document of an agent run (research agent --format
// json, research show, the server).
type AgentDoc struct {
	Schema string `json:"schema"`
	RunRef
	Task       string            `json:"task"`
	Status     nodes.AgentStatus `json:"status"`
	Answer     string            `json:"answer"`
	BestEffort bool              `json:"best_effort,omitempty"`
	Steps      int               `json:"steps"`
	// Sources are the sources the answer cites (it ends with them as a
	// numbered list); SourcesGathered counts the pages the tools returned,
	// DroppedCitations the citations removed because they named none.
	Sources          []SourceDoc         `json:"sources"`
	SourcesGathered  int                 `json:"sources_gathered"`
	DroppedCitations int                 `json:"dropped_citations"`
	Model            string              `json:"model"`
	Usage            map[string]UsageDoc `json:"usage"`
	UsageTotal       UsageDoc            `json:"usage_total"`
	// Cost is what the model calls cost (role agent).
	Cost CostDoc `json:"cost"`
	// Waiting is the question a paused run waits on.
	Waiting string `json:"waiting_for_answer,omitempty"`
	// Incomplete says the run stopped before it finished its task (it
	// failed, timed out, was interrupted, waits for an answer, reached its
	// step limit or was stopped as stuck: its answer is then a best effort
	// from what it gathered); Error says why when the run failed.
	Incomplete bool   `json:"incomplete"`
	Error      string `json:"error,omitempty"`
	// Partial is what a failed run (status error) had done by then.
	Partial string `json:"partial,omitempty"`
}

// UnmarshalJSON reads a document of either schema: v1's
// citations_dropped becomes DroppedCitations.
func (d *AgentDoc) UnmarshalJSON(data []byte) error {
	type plain AgentDoc // without this method
	return readDoc(data, (*plain)(d), &d.DroppedCitations)
}

// AgentResultDoc builds the JSON document of an agent run's result, its
// cost at the built-in prices.
func AgentResultDoc(res *nodes.AgentResult, spec string, runErr error) AgentDoc {
	return PricedAgentResultDoc(RunRef{}, res, spec, nil, runErr)
}

// PricedAgentResultDoc is AgentResultDoc of the run named by run, with
// prices overriding the built-in ones.
func PricedAgentResultDoc(run RunRef, res *nodes.AgentResult, spec string, prices llm.Prices, runErr error) AgentDoc {
	doc := AgentDoc{Schema: AgentResultSchema, RunRef: run, Task: res.Task, Status: res.Status, Answer: CleanText(res.Answer), BestEffort: res.BestEffort,
		Steps: res.Steps, Model: spec, Usage: usageDocs(res.Usage), UsageTotal: UsageOf(res.Usage.Total()),
		Sources: []SourceDoc{}, SourcesGathered: res.Gathered, DroppedCitations: res.Dropped, Partial: CleanText(res.Partial),
		Cost: CostOf(res.Usage, map[string]string{llm.RoleAgent: spec}, prices), Incomplete: res.Incomplete}
	for i, s := range res.Sources {
		doc.Sources = append(doc.Sources, SourceDoc{Number: i + 1, Title: s.Title, URL: s.URL, Label: s.Label})
	}
	if res.Waiting != nil {
		doc.Waiting = CleanText(res.Waiting.Question)
	}
	if runErr != nil {
		doc.Incomplete, doc.Error = true, runErr.Error()
	}
	return doc
}

// CleanText drops control characters but new lines and tabs: text from
// models and web pages, before it reaches a terminal or a document.
func CleanText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

// OneLine folds s onto one line (control characters and line separators
// become spaces, runs of spaces one) and cuts it to max runes with an
// ellipsis (max ≤ 0: no cut).
func OneLine(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); max > 0 && len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}
