package server

import (
	"encoding/json"
	"strings"

	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/research"
)

// The timeline of a run, as custom events carry it (customEvent), and the
// CLI's answers to reviews.

// Activity is the data of an activity event: one timeline entry.
type Activity struct {
	// Kind is a research activity (generating_queries, queries, searching,
	// searched, reflecting, reflected, finalizing, answered, failed,
	// review) or an agent step (agent_think, agent_act, agent_nudge,
	// agent_done).
	Kind string `json:"kind"`
	// Text is the timeline line the CLI prints ("" for entries that only
	// say what is in progress).
	Text      string `json:"text"`
	ElapsedMS int64  `json:"elapsed_ms"`
	// Tokens are the tokens spent so far.
	Tokens     int         `json:"tokens"`
	Node       string      `json:"node,omitempty"`
	Step       int         `json:"step,omitempty"`
	Queries    []string    `json:"queries,omitempty"`
	Query      string      `json:"query,omitempty"`
	Sources    int         `json:"sources,omitempty"`
	Labels     []string    `json:"labels,omitempty"`
	Reflection *Reflection `json:"reflection,omitempty"`
	Loop       int         `json:"loop,omitempty"`
	Cited      int         `json:"cited,omitempty"`
	Dropped    int         `json:"dropped,omitempty"`
	Error      string      `json:"error,omitempty"`
	Thought    string      `json:"thought,omitempty"`
	Calls      []ToolCall  `json:"calls,omitempty"`
	Tool       string      `json:"tool,omitempty"`
	Output     string      `json:"output,omitempty"`
	Failed     bool        `json:"failed,omitempty"`
	DurationMS int64       `json:"duration_ms,omitempty"`
	Status     string      `json:"status,omitempty"`
}

// Reflection is a reflection's verdict.
type Reflection struct {
	IsSufficient    bool     `json:"is_sufficient"`
	KnowledgeGap    string   `json:"knowledge_gap"`
	FollowUpQueries []string `json:"follow_up_queries"`
}

// ToolCall is a tool an agent called, with its arguments as JSON text.
type ToolCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// researchActivity is a research activity as an event.
func researchActivity(a research.Activity) Activity {
	out := Activity{Kind: string(a.Kind), Text: app.ActivityLine(a), Node: a.Node, Step: a.Step, Queries: a.Queries, Query: a.Query,
		Sources: a.Sources, Labels: a.Labels, Loop: a.Loop, Cited: a.Cited, Dropped: a.Dropped, Error: a.Error}
	if r := a.Reflection; r != nil {
		out.Reflection = &Reflection{IsSufficient: r.IsSufficient, KnowledgeGap: r.KnowledgeGap, FollowUpQueries: r.FollowUpQueries}
		if out.Reflection.FollowUpQueries == nil {
			out.Reflection.FollowUpQueries = []string{}
		}
	}
	return out
}

// maxToolOutput bounds a tool's output in an event.
const maxToolOutput = 4000

// agentActivity is an agent step as an event.
func agentActivity(ev nodes.AgentEvent) Activity {
	out := Activity{Kind: "agent_" + string(ev.Kind), Text: strings.Join(app.AgentLines(ev), "\n"), Step: ev.Step,
		Thought: app.CleanText(ev.Thought), Tool: ev.Tool, Failed: ev.Failed, DurationMS: ev.Duration.Milliseconds(), Status: string(ev.Status)}
	for _, c := range ev.Calls {
		out.Calls = append(out.Calls, ToolCall{Name: c.Name, Arguments: app.OneLine(string(c.Arguments), 2000)})
	}
	if ev.Output != "" {
		out.Output = clipRunes(app.CleanText(ev.Output), maxToolOutput)
	}
	return out
}

func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// reviewAnswer reads the answer to a review: a string as the CLI takes it
// ("ok", "stop", queries separated by ";") or a research.ReviewAnswer.
func reviewAnswer(raw json.RawMessage) (research.ReviewAnswer, error) {
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return app.ParseReviewAnswer(text)
	}
	return app.ParseReviewAnswer(string(raw))
}
