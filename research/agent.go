package research

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/tools"
)

// ToolName is the name of the deep-research tool.
const ToolName = "deep_research"

// maxToolQuestion caps the question of a deep_research call, in characters.
const maxToolQuestion = 2000

type toolArgs struct {
	Question string `json:"question" jsonschema:"The question to research, stated fully: it is researched on its own, without the conversation."`
	Effort   string `json:"effort,omitempty" jsonschema:"How broad and deep: low (1 query, 1 round), medium (3 queries, up to 3 rounds) or high (5 queries, up to 10 rounds)."`
}

// ExtendSchema lists the efforts.
func (toolArgs) ExtendSchema(s *jsonschema.Schema) {
	var names []any
	for _, e := range Efforts() {
		names = append(names, e.Name)
	}
	s.Properties["effort"].Enum = names
}

// NewTool offers the researcher to an agent as the tool deep_research
// (question, effort): it runs the whole deep-search graph on the question
// and returns the cited report — the answer with numbered citations and its
// Sources list — with the sources as the result's Sources, so the agent can
// cite them in turn. defaultEffort ("low", "medium", "high"; "" for the
// researcher's own settings) applies when the call names none. The run's
// activity reaches the agent's stream as research.Activity events (tokens
// left out).
func NewTool(r *Researcher, defaultEffort string) (tools.Tool, error) {
	if r == nil {
		return nil, errors.New("research: NewTool: the researcher is nil")
	}
	if defaultEffort != "" {
		if _, err := EffortByName(defaultEffort); err != nil {
			return nil, fmt.Errorf("research: NewTool: %w", err)
		}
	}
	desc := "Research a question in depth on the web: several searches, reading and reflection over one or more rounds, then a report whose every claim cites its sources. Slower and costlier than web_search (a minute or more); use it for questions that need several sources, not for a single fact."
	return tools.Func(ToolName, desc, func(ctx context.Context, a toolArgs) (tools.Result, error) {
		q := strings.TrimSpace(a.Question)
		if q == "" {
			return tools.Failf("the question is empty"), nil
		}
		if n := utf8.RuneCountInString(q); n > maxToolQuestion {
			return tools.Failf("the question is %d characters long; keep it under %d", n, maxToolQuestion), nil
		}
		effort := a.Effort
		if effort == "" {
			effort = defaultEffort
		}
		opts := []RunOption{emitActivity(ctx)}
		if effort != "" {
			e, err := EffortByName(effort)
			if err != nil {
				return tools.Failf("%v", err), nil
			}
			opts = append(opts, InitialQueries(e.Queries), MaxLoops(e.Loops))
		}
		rep, err := r.Run(ctx, q, opts...)
		if err != nil && (rep == nil || ctx.Err() != nil) {
			return tools.Result{}, err
		}
		res := tools.Text(rep.Markdown())
		for _, s := range rep.Sources {
			res.Sources = append(res.Sources, tools.Source{URL: s.URL, Title: s.Title})
		}
		if err != nil {
			res.Error = fmt.Sprintf("the research stopped before its answer (%v); below is what it gathered", err)
		}
		return res, nil
	})
}

// Executor offers the researcher to a planning flow (nodes.Flow) as an
// executor, usually named "researcher": a step is researched as a question
// — its text, with the flow's task for context — and its result is the
// cited report, whose sources the flow's summary may cite. A report that
// stopped before its answer leaves the step blocked. opts apply to every
// step's run (InitialQueries, MaxLoops, …).
func (r *Researcher) Executor(opts ...RunOption) nodes.Executor {
	return nodes.ExecutorFunc(func(ctx context.Context, t nodes.StepTask) (nodes.StepResult, error) {
		q := t.Step
		if strings.TrimSpace(t.Task) != "" && t.Task != t.Step {
			q = fmt.Sprintf("%s\n\n(This question is one step of a larger task: %s)", t.Step, t.Task)
		}
		run := append([]RunOption{emitActivity(ctx)}, opts...)
		rep, err := r.Run(ctx, q, run...)
		if rep == nil {
			return nodes.StepResult{}, err
		}
		out := nodes.StepResult{Output: rep.Markdown(), Sources: rep.Sources, Usage: rep.Usage}
		switch {
		case err != nil:
			return out, err
		case rep.Incomplete || strings.TrimSpace(rep.Answer) == "":
			out.Blocked = "the research stopped before its answer"
		}
		return out, nil
	})
}

// emitActivity passes the run's activity, but its tokens, to the stream of
// the graph the caller runs in (an agent's, a flow's).
func emitActivity(ctx context.Context) RunOption {
	return Observe(func(act Activity) {
		if act.Kind != ActivityToken {
			graph.Emit(ctx, act)
		}
	})
}
