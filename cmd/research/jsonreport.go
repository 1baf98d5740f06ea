package main

import (
	"encoding/json"
	"time"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
)

// reportSchema names the JSON report's layout; it changes when a field is
// removed or changes meaning (adding fields does not).
const reportSchema = "deepgraph.research.report/v1"

// jsonReport is the document research --format json prints. The README
// documents it field by field.
type jsonReport struct {
	Schema   string `json:"schema"`
	Question string `json:"question"`
	// Answer is the answer in Markdown with numbered citations [n](url).
	Answer string `json:"answer"`
	// Markdown is the whole report as research prints it without --format:
	// the answer followed by the numbered Sources list.
	Markdown string `json:"markdown"`
	// Sources are the cited sources; Number is the n of [n](url).
	Sources          []jsonSource `json:"sources"`
	SourcesGathered  int          `json:"sources_gathered"`
	CitationsDropped int          `json:"citations_dropped"`
	Queries          []string     `json:"queries"`
	Loops            int          `json:"loops"`
	Backend          string       `json:"backend"`
	// Models is the model spec per role (query, research, reflection,
	// answer).
	Models map[string]string `json:"models"`
	// Usage is per role; UsageTotal the sum.
	Usage      map[string]jsonUsage `json:"usage"`
	UsageTotal jsonUsage            `json:"usage_total"`
	Timings    jsonTimings          `json:"timings"`
	// Incomplete is true when the run stopped before its answer
	// (interrupted, timed out, failed): Answer then holds what was gathered.
	Incomplete bool `json:"incomplete"`
	// Error is why the run stopped, when it did not finish.
	Error string `json:"error,omitempty"`
}

type jsonSource struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	URL    string `json:"url"`
	Label  string `json:"label"`
}

type jsonUsage struct {
	Calls            int `json:"calls"`
	Failed           int `json:"failed"`
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CachedTokens     int `json:"cached_tokens"`
	ReasoningTokens  int `json:"reasoning_tokens"`
}

type jsonTimings struct {
	TotalMS float64    `json:"total_ms"`
	Steps   []jsonStep `json:"steps"`
}

type jsonStep struct {
	Node  string  `json:"node"`
	Tasks int     `json:"tasks"`
	MS    float64 `json:"ms"`
}

func usageOf(t llm.Tally) jsonUsage {
	return jsonUsage{Calls: t.Calls, Failed: t.Failed, PromptTokens: t.Usage.PromptTokens, CompletionTokens: t.Usage.CompletionTokens,
		TotalTokens: tokens(t.Usage), CachedTokens: t.Usage.CachedTokens, ReasoningTokens: t.Usage.ReasoningTokens}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// jsonDocument renders rep as the JSON report.
func jsonDocument(rep *research.Report, models map[string]string, runErr error) ([]byte, error) {
	doc := jsonReport{
		Schema: reportSchema, Question: rep.Question, Answer: cleanText(rep.Answer), Markdown: cleanText(rep.Markdown()),
		Sources: []jsonSource{}, SourcesGathered: rep.Gathered, CitationsDropped: rep.Dropped, Queries: rep.Queries, Loops: rep.Loops,
		Backend: rep.Backend, Models: models, Usage: map[string]jsonUsage{}, UsageTotal: usageOf(rep.Usage.Total()),
		Timings:    jsonTimings{TotalMS: ms(rep.Timings.Total), Steps: []jsonStep{}},
		Incomplete: rep.Incomplete || runErr != nil,
	}
	if doc.Queries == nil {
		doc.Queries = []string{}
	}
	if doc.Models == nil {
		doc.Models = map[string]string{}
	}
	for i, s := range rep.Sources {
		doc.Sources = append(doc.Sources, jsonSource{Number: i + 1, Title: s.Title, URL: s.URL, Label: s.Label})
	}
	for _, role := range rep.Usage.Roles() {
		doc.Usage[role] = usageOf(rep.Usage[role])
	}
	for _, st := range rep.Timings.Steps {
		doc.Timings.Steps = append(doc.Timings.Steps, jsonStep{Node: st.Node, Tasks: st.Tasks, MS: ms(st.Duration)})
	}
	if runErr != nil {
		doc.Error = runErr.Error()
	}
	return json.MarshalIndent(doc, "", "  ")
}
