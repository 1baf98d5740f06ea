package research

import (
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/schemas"
)

// State is the deep-search graph's state. Fields below Messages hold the
// current turn and are reset when a new question arrives on a thread.
type State struct {
	// Messages is the conversation: the user's questions and the answers.
	Messages []schemas.Message `json:"messages"`
	// InitialQueries and MaxLoops are the run's limits (0: the Researcher's).
	InitialQueries int `json:"initial_search_query_count,omitempty"`
	MaxLoops       int `json:"max_research_loops,omitempty"`
	// Review makes the turn pause for a person to approve or edit the
	// queries before each round of searches (nil: as the thread's last turn).
	Review *bool `json:"review,omitempty"`

	// Queries lists every query of this turn, once each, in the order they
	// were searched; a query's ID is its index here.
	Queries []string `json:"queries"`
	// Pending are the follow-up queries the last reflection sent to search.
	Pending []string `json:"pending,omitempty"`
	// Findings are the web research results of this turn, in query order
	// within each round.
	Findings []Finding `json:"findings"`
	// Notes are condensed findings, by Finding.ID: a finding gets one when
	// the findings in full no longer fit the context budget of reflection or
	// the answer (Config.ContextBudget). Its Sources stay gathered.
	Notes map[int]string `json:"notes,omitempty"`
	// Loops counts the reflections of this turn.
	Loops int `json:"research_loop_count"`
	// Reflection is the last reflection.
	Reflection schemas.Reflection `json:"reflection"`
	// Answer is the final answer with numbered citations; Cited are its
	// sources, in number order; Dropped counts citations removed because they
	// pointed to no source gathered in this turn.
	Answer  string            `json:"answer"`
	Cited   []citation.Source `json:"cited,omitempty"`
	Dropped int               `json:"dropped_citations"`
	// Usage is the tokens and calls the turn spent, per role: a follow-up
	// question on a thread counts from zero.
	Usage llm.UsageByRole `json:"usage,omitempty"`
}

// Finding is the result of researching one query: a summary whose facts
// carry citation markers, and the sources those markers point to.
type Finding struct {
	Query   string            `json:"query"`
	ID      int               `json:"id"`
	Summary string            `json:"summary"`
	Sources []citation.Source `json:"sources,omitempty"`
	// Warnings say how the research of this query degraded: pages it could
	// not read, a search that found nothing.
	Warnings []Warning `json:"warnings,omitempty"`
	// SnippetsOnly is set when no source had more text than its search
	// snippet: no page could be read.
	SnippetsOnly bool `json:"snippets_only,omitempty"`
}

// Gathered returns every source gathered in this turn, in finding order.
func (s State) Gathered() []citation.Source {
	n := 0
	for _, f := range s.Findings {
		n += len(f.Sources)
	}
	if n == 0 {
		return nil
	}
	out := make([]citation.Source, 0, n)
	for _, f := range s.Findings {
		out = append(out, f.Sources...)
	}
	return out
}

// gatheredAny reports whether any finding has a source (len(Gathered()) > 0,
// without building the list).
func (s State) gatheredAny() bool {
	for _, f := range s.Findings {
		if len(f.Sources) > 0 {
			return true
		}
	}
	return false
}

// Task is the input of one web_research task.
type Task struct {
	Query string `json:"query"`
	ID    int    `json:"id"`
	Topic string `json:"topic"` // the question, for the summary's focus
	// Budget bounds the research prompt, in tokens (Query.Budget); 0, as
	// in tasks checkpointed before it existed, means no bound.
	Budget int `json:"budget,omitempty"`
}

// Field handles of State.
var (
	fMessages   = graph.Append(func(s *State) *[]schemas.Message { return &s.Messages })
	fQueries    = graph.Append(func(s *State) *[]string { return &s.Queries })
	fPending    = graph.Value(func(s *State) *[]string { return &s.Pending })
	fFindings   = graph.Append(func(s *State) *[]Finding { return &s.Findings })
	fNotes      = graph.Value(func(s *State) *map[int]string { return &s.Notes })
	fLoops      = graph.Value(func(s *State) *int { return &s.Loops })
	fReflection = graph.Value(func(s *State) *schemas.Reflection { return &s.Reflection })
	fAnswer     = graph.Value(func(s *State) *string { return &s.Answer })
	fCited      = graph.Value(func(s *State) *[]citation.Source { return &s.Cited })
	fDropped    = graph.Value(func(s *State) *int { return &s.Dropped })
	fUsage      = graph.Reduce(func(s *State) *llm.UsageByRole { return &s.Usage }, llm.UsageByRole.Merge)
)

func stateFields() []graph.Field[State] {
	return []graph.Field[State]{fMessages, fQueries, fPending, fFindings, fNotes, fLoops, fReflection, fAnswer, fCited, fDropped, fUsage}
}
