package nodes_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/tools"
)

type planArgs struct {
	Command string   `json:"command"`
	Title   string   `json:"title,omitempty"`
	Steps   []string `json:"steps"`
}

func planCall(command, title string, steps ...string) fake.Reply {
	return fake.ToolCalls(fake.ToolCall("planning", planArgs{Command: command, Title: title, Steps: steps}))
}

// recorder is an executor that records its tasks and answers from a
// function.
type recorder struct {
	name  string
	mu    sync.Mutex
	tasks []nodes.StepTask
	do    func(nodes.StepTask) (nodes.StepResult, error)
}

func (r *recorder) Execute(_ context.Context, t nodes.StepTask) (nodes.StepResult, error) {
	r.mu.Lock()
	r.tasks = append(r.tasks, t)
	r.mu.Unlock()
	if r.do != nil {
		return r.do(t)
	}
	return nodes.StepResult{Output: r.name + " did: " + t.Step}, nil
}

func (r *recorder) steps() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, t := range r.tasks {
		out = append(out, t.Step)
	}
	return out
}

func newFlow(t *testing.T, cfg nodes.FlowConfig, execs ...*recorder) *nodes.Flow {
	t.Helper()
	for _, e := range execs {
		cfg.Executors = append(cfg.Executors, nodes.FlowExecutor{Name: e.name, Description: "does " + e.name + " work", Executor: e})
	}
	f, err := nodes.NewFlow(cfg)
	require.NoError(t, err)
	return f
}

func statuses(p tools.Plan) []tools.StepStatus {
	var out []tools.StepStatus
	for _, s := range p.Steps {
		out = append(out, s.Status)
	}
	return out
}

func TestFlowPlansAndRunsEachStepOnItsExecutor(t *testing.T) {
	planner := fake.New(
		planCall("create", "Go loops", "[researcher] Find what changed for loops in Go 1.22", "Write notes.md", "[RESEARCHER] Check the spec", "[painter] Draw a chart"),
		fake.Text("All four steps were done."),
	)
	writer, researcher := &recorder{name: "writer"}, &recorder{name: "researcher"}
	f := newFlow(t, nodes.FlowConfig{Planner: planner}, writer, researcher)

	var events []nodes.FlowEvent
	res, err := f.Run(context.Background(), "Explain Go 1.22 loops", func(e nodes.FlowEvent) { events = append(events, e) })
	require.NoError(t, err)
	assert.Equal(t, nodes.FlowCompleted, res.Status)
	assert.Equal(t, "Go loops", res.Plan.Title)
	assert.Equal(t, []tools.StepStatus{"completed", "completed", "completed", "completed"}, statuses(res.Plan))
	// Tags pick the executor, case-insensitively; untagged and unknown
	// tags go to the default (the first executor).
	assert.Equal(t, []string{"Find what changed for loops in Go 1.22", "Check the spec"}, researcher.steps())
	assert.Equal(t, []string{"Write notes.md", "Draw a chart"}, writer.steps())
	assert.Equal(t, "All four steps were done.", res.Summary)

	// Each executor saw the plan, its step and the earlier results.
	last := writer.tasks[1]
	assert.Equal(t, 3, last.Index)
	require.Len(t, last.Previous, 3)
	assert.Equal(t, "researcher did: Check the spec", last.Previous[2].Output)
	assert.Equal(t, tools.StepInProgress, last.Plan.Steps[3].Status)
	assert.Contains(t, last.Prompt(), "Do step 3 now, and only this step: Draw a chart")
	assert.Contains(t, last.Prompt(), `<step_result index="0" status="completed" untrusted="true">`)

	// The planner was asked with the planning tool, forced, and told the
	// executors.
	calls := planner.Calls()
	require.Len(t, calls, 2)
	assert.Equal(t, "planning", string(calls[0].Request.ToolChoice))
	assert.Contains(t, calls[0].Messages[0].Content, "- [researcher] does researcher work")

	var kinds []string
	for _, e := range events {
		switch e.Kind {
		case nodes.FlowEventStepStart:
			kinds = append(kinds, "start "+e.Executor)
			if e.Step == 3 {
				assert.Contains(t, e.Note, `no executor is called "painter"`)
			}
		case nodes.FlowEventStepDone:
			kinds = append(kinds, string(e.Status))
		case nodes.FlowEventPlanner:
			if len(kinds) == 0 || kinds[len(kinds)-1] != "tokens" {
				kinds = append(kinds, "tokens")
			}
		default:
			kinds = append(kinds, string(e.Kind))
		}
	}
	assert.Equal(t, []string{"plan", "start researcher", "completed", "start writer", "completed", "start researcher", "completed", "start writer", "completed", "tokens", "done"}, kinds)
}

func TestFlowBlockedStepIsRevisedNeverCompleted(t *testing.T) {
	planner := fake.New(
		planCall("create", "Plan", "Fetch the dataset", "Plot it"),
		planCall("update", "", "Use the mirror instead", "Plot it").When(fake.AnyContains("is blocked")),
		fake.Text("The dataset was fetched from the mirror and plotted; the first source was down."),
	)
	fail := errors.New("connection refused")
	exec := &recorder{name: "agent", do: func(t nodes.StepTask) (nodes.StepResult, error) {
		if t.Step == "Fetch the dataset" {
			return nodes.StepResult{Output: "tried twice"}, fail
		}
		return nodes.StepResult{Output: "done: " + t.Step}, nil
	}}
	f := newFlow(t, nodes.FlowConfig{Planner: planner}, exec)
	res, err := f.Run(context.Background(), "Plot the dataset", nil)
	require.NoError(t, err)
	assert.Equal(t, nodes.FlowPartial, res.Status, "a blocked step makes the run partial")
	assert.Equal(t, 1, res.Revisions)
	require.Len(t, res.Plan.Steps, 3)
	assert.Equal(t, tools.StepBlocked, res.Plan.Steps[0].Status)
	assert.Contains(t, res.Plan.Steps[0].Notes, "connection refused")
	assert.Equal(t, "Use the mirror instead", res.Plan.Steps[1].Text)
	assert.Equal(t, []tools.StepStatus{"blocked", "completed", "completed"}, statuses(res.Plan))
	assert.Equal(t, []string{"Fetch the dataset", "Use the mirror instead", "Plot it"}, exec.steps())
	require.Len(t, res.Steps, 3)
	assert.Equal(t, tools.StepBlocked, res.Steps[0].Status)
	assert.Equal(t, "connection refused", res.Steps[0].Reason)
	// The revision prompt showed the blocked step and why.
	rev := planner.Calls()[1].LastMessage().Content
	assert.Contains(t, rev, "[!] Fetch the dataset")
	assert.Contains(t, rev, "Blocked: connection refused")
}

func TestFlowRevisionsAreBounded(t *testing.T) {
	planner := fake.New(
		planCall("create", "Plan", "Try A"),
		planCall("update", "", "Try B").When(fake.AnyContains("is blocked")),
		fake.Text("Nothing worked."),
	)
	exec := &recorder{name: "agent", do: func(nodes.StepTask) (nodes.StepResult, error) {
		return nodes.StepResult{Blocked: "no access"}, nil
	}}
	f := newFlow(t, nodes.FlowConfig{Planner: planner, MaxRevisions: 1}, exec)
	res, err := f.Run(context.Background(), "task", nil)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Revisions)
	assert.Equal(t, []tools.StepStatus{"blocked", "blocked"}, statuses(res.Plan))
	assert.Equal(t, nodes.FlowPartial, res.Status)
	assert.Zero(t, planner.Remaining())
}

func TestFlowAgentExecutorBudgetIsPerStep(t *testing.T) {
	planner := fake.New(planCall("create", "Plan", "Step one", "Step two"), fake.Text("summary"))
	// The agent never terminates by itself: each step spends its whole
	// budget of 2 think steps, then writes a best-effort answer.
	var n int
	model := fake.New()
	for range 2 {
		model.Add(
			fake.ToolCalls(fake.ToolCall("lookup", lookupArgs{Key: "a"})),
			fake.ToolCalls(fake.ToolCall("lookup", lookupArgs{Key: "b"})),
			fake.Text("best effort"),
		)
	}
	col, err := tools.NewCollection(tools.MustFunc("lookup", "Looks up.", func(_ context.Context, a lookupArgs) (tools.Result, error) {
		n++
		return tools.Text("v" + a.Key), nil
	}))
	require.NoError(t, err)
	agent, err := nodes.NewAgent(nodes.AgentConfig{Model: model, Tools: col, MaxSteps: 2})
	require.NoError(t, err)
	f, err := nodes.NewFlow(nodes.FlowConfig{Planner: planner, MaxRevisions: -1,
		Executors: []nodes.FlowExecutor{{Name: "agent", Executor: nodes.AgentExecutor(agent)}}})
	require.NoError(t, err)

	var thinks []int
	res, err := f.Run(context.Background(), "task", func(e nodes.FlowEvent) {
		if ae, ok := e.Event.(nodes.AgentEvent); ok && ae.Kind == nodes.AgentEventThink {
			thinks = append(thinks, ae.Step)
		}
	})
	require.NoError(t, err)
	// Both steps got 2 think steps of their own: a budget is never carried
	// over. Running out of it blocks the step; it is never "completed".
	assert.Equal(t, []int{1, 2, 1, 2}, thinks)
	assert.Equal(t, 4, n)
	assert.Equal(t, []tools.StepStatus{"blocked", "blocked"}, statuses(res.Plan))
	assert.Contains(t, res.Steps[0].Reason, "max_steps")
	assert.Contains(t, res.Steps[0].Output, "best effort")
	assert.Zero(t, model.Remaining())
	// The step's prompt held the plan and the step.
	assert.Contains(t, model.Calls()[0].Messages[1].Content, "Do step 0 now, and only this step: Step one")
}

func TestFlowApprovalInterruptsAndResumesWithAnEditedPlan(t *testing.T) {
	planner := fake.New(planCall("create", "Draft", "Step A", "Step B"), fake.Text("Done as edited."))
	exec := &recorder{name: "agent"}
	cp := graph.NewMemorySaver()
	f := newFlow(t, nodes.FlowConfig{Planner: planner, Approve: true, Checkpointer: cp}, exec)
	ctx := context.Background()

	res, err := f.Run(ctx, "task", nil, graph.Thread("t1"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.NotNil(t, res.Waiting)
	assert.Equal(t, []string{"Step A", "Step B"}, []string{res.Waiting.Plan.Steps[0].Text, res.Waiting.Plan.Steps[1].Text})
	assert.Empty(t, exec.steps(), "nothing runs before approval")

	var events []nodes.FlowEvent
	res, err = f.Resume(ctx, func(e nodes.FlowEvent) { events = append(events, e) }, graph.Thread("t1"),
		graph.Answer(nodes.PlanApproval{Title: "Edited", Steps: []string{"Step A", "Step C", "Step D"}}))
	require.NoError(t, err)
	assert.Equal(t, nodes.FlowCompleted, res.Status)
	assert.Equal(t, "Edited", res.Plan.Title)
	assert.Equal(t, []string{"Step A", "Step C", "Step D"}, exec.steps())
	require.NotEmpty(t, events)
	assert.Equal(t, nodes.FlowEventApproved, events[0].Kind)
	assert.Equal(t, "edited", events[0].Note)
}

func TestFlowRejectedPlanRunsNothing(t *testing.T) {
	planner := fake.New(planCall("create", "Draft", "Delete everything"), fake.Text("Nothing was done: the plan was rejected."))
	exec := &recorder{name: "agent"}
	f := newFlow(t, nodes.FlowConfig{Planner: planner, Approve: true, Checkpointer: graph.NewMemorySaver()}, exec)
	_, err := f.Run(context.Background(), "task", nil, graph.Thread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	res, err := f.Resume(context.Background(), nil, graph.Thread("t"), graph.Answer(nodes.PlanApproval{Reject: true, Reason: "too risky"}))
	require.NoError(t, err)
	assert.Equal(t, nodes.FlowRejected, res.Status)
	assert.Empty(t, exec.steps())
	assert.Contains(t, planner.Calls()[1].LastMessage().Content, "too risky")
}

func TestFlowSummaryCitesTheStepsSources(t *testing.T) {
	planner := fake.New(
		planCall("create", "Plan", "[researcher] Research it", "Write it up"),
		fake.Text("Loops changed in Go 1.22 [S1]; see also [made up](https://evil.example/x) [S7]."),
	)
	researcher := &recorder{name: "researcher", do: func(t nodes.StepTask) (nodes.StepResult, error) {
		return nodes.StepResult{Output: "Each iteration has its own variable [1](https://go.dev/blog/loopvar).",
			Sources: []citation.Source{{URL: "https://go.dev/blog/loopvar", Title: "Fixing For Loops"}}}, nil
	}}
	f := newFlow(t, nodes.FlowConfig{Planner: planner}, &recorder{name: "agent"}, researcher)
	res, err := f.Run(context.Background(), "task", nil)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Gathered)
	assert.Equal(t, 2, res.Dropped)
	require.Len(t, res.Sources, 1)
	assert.Equal(t, "Loops changed in Go 1.22 [1](https://go.dev/blog/loopvar); see also made up.\n\n## Sources\n\n1. [Fixing For Loops](https://go.dev/blog/loopvar)\n", res.Summary)
	prompt := planner.Calls()[1].LastMessage().Content
	assert.Contains(t, prompt, "[S1] https://go.dev/blog/loopvar — Fixing For Loops")
}

// outer is a graph state that runs a flow as one of its nodes.
type outer struct {
	Task    string `json:"task"`
	Summary string `json:"summary"`
}

func TestFlowInsideALargerGraphStreamsItsEvents(t *testing.T) {
	planner := fake.New(planCall("create", "Plan", "Only step"), fake.Text("The summary."))
	f := newFlow(t, nodes.FlowConfig{Planner: planner}, &recorder{name: "agent"})

	summary := graph.Value(func(s *outer) *string { return &s.Summary })
	g := graph.New[outer](summary)
	graph.AddMappedSubgraph(g, "flow", f.Graph(),
		func(s outer) nodes.FlowState { return nodes.FlowState{Task: s.Task, Reviewed: -1} },
		func(fs nodes.FlowState) graph.Update[outer] { return graph.Writes(summary.Set(fs.Summary)) })
	g.AddEdge(graph.Start, "flow")
	g.AddEdge("flow", graph.End)
	c, err := g.Compile()
	require.NoError(t, err)

	var seen []string
	var final outer
	for ev, err := range c.Stream(context.Background(), outer{Task: "task"}) {
		require.NoError(t, err)
		switch ev.Kind {
		case graph.EventCustom:
			if fe, ok := ev.Value.(nodes.FlowEvent); ok {
				seen = append(seen, ev.Node+" "+string(fe.Kind))
			}
		case graph.EventEnd:
			final = ev.State
		}
	}
	assert.Equal(t, []string{"flow/plan plan", "flow/start_step step_start", "flow/execute_step step_done", "flow/summarize done"}, seen)
	assert.Equal(t, "The summary.", final.Summary)
}

func TestNewFlowErrors(t *testing.T) {
	m := fake.New()
	ex := nodes.ExecutorFunc(func(context.Context, nodes.StepTask) (nodes.StepResult, error) { return nodes.StepResult{}, nil })
	for _, tc := range []struct {
		cfg  nodes.FlowConfig
		want string
	}{
		{nodes.FlowConfig{Executors: []nodes.FlowExecutor{{Name: "a", Executor: ex}}}, "planner"},
		{nodes.FlowConfig{Planner: m}, "no executors"},
		{nodes.FlowConfig{Planner: m, Executors: []nodes.FlowExecutor{{Name: "a b", Executor: ex}}}, `invalid name "a b"`},
		{nodes.FlowConfig{Planner: m, Executors: []nodes.FlowExecutor{{Name: "a", Executor: ex}, {Name: "A", Executor: ex}}}, "two executors"},
		{nodes.FlowConfig{Planner: m, Executors: []nodes.FlowExecutor{{Name: "a", Executor: ex}}, Default: "b"}, `default executor "b"`},
		{nodes.FlowConfig{Planner: m, Executors: []nodes.FlowExecutor{{Name: "a", Executor: ex}}, Approve: true}, "Checkpointer"},
	} {
		_, err := nodes.NewFlow(tc.cfg)
		assert.ErrorContains(t, err, tc.want)
	}
}

func TestFlowEmptyRevisionIsRefused(t *testing.T) {
	planner := fake.New(
		planCall("create", "Plan", "Fetch the dataset", "Plot it", "Write notes.md"),
		planCall("update", "").When(fake.AnyContains("is blocked")),
		fake.Text("The dataset could not be fetched; the plot and the notes were made from the cache."),
	)
	exec := &recorder{name: "agent", do: func(t nodes.StepTask) (nodes.StepResult, error) {
		if t.Step == "Fetch the dataset" {
			return nodes.StepResult{Blocked: "the server is down"}, nil
		}
		return nodes.StepResult{Output: "done: " + t.Step}, nil
	}}
	f := newFlow(t, nodes.FlowConfig{Planner: planner, MaxRevisions: 1}, exec)
	var notes []string
	res, err := f.Run(context.Background(), "Plot the dataset", func(e nodes.FlowEvent) {
		if e.Kind == nodes.FlowEventRevised {
			notes = append(notes, e.Note)
		}
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"Fetch the dataset", "Plot it", "Write notes.md"}, exec.steps(), "the remaining steps were not dropped")
	assert.Equal(t, []tools.StepStatus{"blocked", "completed", "completed"}, statuses(res.Plan))
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "gave no steps: refused")
	assert.Contains(t, notes[0], "2 remaining steps")
}

func TestFlowThatFailsKeepsItsFinishedSteps(t *testing.T) {
	boom := errors.New("the planner's provider is down")
	planner := fake.New(
		planCall("create", "Plan", "Find the release date", "Find the changes", "Write the notes"),
		fake.Error(boom).Repeat(),
	)
	exec := &recorder{name: "agent", do: func(t nodes.StepTask) (nodes.StepResult, error) {
		if t.Step == "Write the notes" {
			return nodes.StepResult{}, context.DeadlineExceeded
		}
		return nodes.StepResult{Output: "Found for " + t.Step + " [S1].",
			Sources: []citation.Source{citation.ForResult("Go blog", "https://go.dev/blog/go1.22", 0, 1)}}, nil
	}}
	f := newFlow(t, nodes.FlowConfig{Planner: planner, MaxRevisions: -1, ModelRetry: &graph.RetryPolicy{MaxAttempts: 1}}, exec)
	res, err := f.Run(context.Background(), "Go 1.22 notes", nil)
	require.Error(t, err)
	require.NotNil(t, res)
	assert.True(t, res.Incomplete)
	assert.Empty(t, res.Summary)
	assert.Contains(t, res.Partial, "Step 1 (agent, completed): Find the release date")
	assert.Contains(t, res.Partial, "Found for Find the changes")
	assert.Contains(t, res.Partial, "https://go.dev/blog/go1.22", "the partial cites the gathered source")
	require.NotEmpty(t, res.Sources)
}

func TestFlowPartialHasOneSourcesList(t *testing.T) {
	planner := fake.New(planCall("create", "Plan", "A", "B"), fake.Error(errors.New("down")).Repeat())
	src := citation.ForResult("Go blog", "https://go.dev/blog/go1.22", 0, 1)
	exec := &recorder{name: "agent", do: func(t nodes.StepTask) (nodes.StepResult, error) {
		return nodes.StepResult{Output: "Found " + t.Step + " [1](https://go.dev/blog/go1.22).\n\n## Sources\n\n1. [Go blog](https://go.dev/blog/go1.22)\n",
			Sources: []citation.Source{src}}, nil
	}}
	f := newFlow(t, nodes.FlowConfig{Planner: planner, MaxRevisions: -1, ModelRetry: &graph.RetryPolicy{MaxAttempts: 1}}, exec)
	res, err := f.Run(context.Background(), "task", nil)
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(res.Partial, "## Sources"), res.Partial)
	assert.Contains(t, res.Partial, "Found A")
	assert.Contains(t, res.Partial, "Found B")
}

// TestFlowTimedOutWritesABestEffortSummary: a flow whose deadline passes
// while a step runs asks the planner, on a fresh budget, for a summary of
// what its finished steps did; Partial has it first, then the steps'
// results, with one Sources list.
func TestFlowTimedOutWritesABestEffortSummary(t *testing.T) {
	planner := fake.New(
		planCall("create", "Plan", "Find the release date", "Write the notes"),
		// After makes the call honour its context: on the expired run
		// context it would fail, so the summary proves the fresh budget.
		fake.Text("Go 1.22 came out in February 2024 [S1]; the notes were not written.").After(time.Millisecond),
	).Strict()
	exec := nodes.ExecutorFunc(func(ctx context.Context, t nodes.StepTask) (nodes.StepResult, error) {
		if t.Step == "Write the notes" {
			<-ctx.Done() // the step outlives the run's deadline
			return nodes.StepResult{}, ctx.Err()
		}
		return nodes.StepResult{Output: "Released in February 2024 [S1].",
			Sources: []citation.Source{citation.ForResult("Go blog", "https://go.dev/blog/go1.22", 0, 1)}}, nil
	})
	f, err := nodes.NewFlow(nodes.FlowConfig{Planner: planner, MaxRevisions: -1, Executors: []nodes.FlowExecutor{{Name: "agent", Executor: exec}}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res, err := f.Run(ctx, "Go 1.22 notes", nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotNil(t, res)
	assert.True(t, res.Incomplete)
	assert.True(t, res.BestEffort)
	assert.Empty(t, res.Summary, "no summary of a finished run")
	assert.Contains(t, res.Partial, "a summary of what it had done (incomplete)")
	assert.Contains(t, res.Partial, "Go 1.22 came out in February 2024 [1](https://go.dev/blog/go1.22)")
	assert.Contains(t, res.Partial, "Step 1 (agent, completed): Find the release date")
	assert.Equal(t, 1, strings.Count(res.Partial, "## Sources"))
	require.Len(t, planner.Calls(), 2)
	assert.Contains(t, planner.Calls()[1].Messages[0].Content, "ran out of time")
	assert.Equal(t, 2, res.Usage.Total().Calls, "the summary's call is counted")
}
