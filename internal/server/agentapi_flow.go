package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/telemetry"
	"github.com/deepgraph/deepgraph/tools"
)

// The planning flow as the assistant "flow" (when serve.allow_agent, as the
// agent): its input is the task as a human message, and a thread takes one
// task; its values are the task, the plan with each step's status, what
// each finished step found, and the summary as the last ai message with
// its cited sources; the plan, the steps and their executors' work are
// custom activity events, its cost a custom cost event. With
// config.configurable.review the run pauses after the plan and each
// revision: an interrupt whose value is LangChain's HITLRequest (action
// approve_plan, args.steps), answered with Agent Chat UI's decisions
// (approve; edit with args.steps; reject with a reason) or text as
// research resume --answer takes it. An agent step's questions and tool
// approvals are the agent's interrupts.

const graphFlow = "flow"

// actionApprovePlan is the action of a plan review, for Agent Chat UI.
const actionApprovePlan = "approve_plan"

// flowValues are a flow thread's values as clients see them.
type flowValues struct {
	Messages []agentserver.Message `json:"messages"`
	Task     string                `json:"task"`
	Plan     tools.Plan            `json:"plan"`
	Outcomes []nodes.StepOutcome   `json:"outcomes"`
	Status   nodes.FlowStatus      `json:"status,omitempty"`
	Summary  string                `json:"summary,omitempty"`
	Sources  []citation.Source     `json:"sources"`
	Usage    llm.UsageByRole       `json:"usage,omitempty"`
}

func flowValuesOf(s nodes.FlowState) any {
	msgs := []schemas.Message{schemas.UserMessage(s.Task)}
	if s.Summary != "" {
		msgs = append(msgs, schemas.AssistantMessage(s.Summary))
	}
	v := flowValues{Messages: langchainMessages(msgs), Task: s.Task, Plan: s.Plan, Outcomes: s.Outcomes, Status: s.Status, Summary: s.Summary,
		Sources: s.Cited, Usage: s.Usage}
	if v.Outcomes == nil {
		v.Outcomes = []nodes.StepOutcome{}
	}
	if v.Sources == nil {
		v.Sources = []citation.Source{}
	}
	return v
}

// flowAPI serves the planning flow.
type flowAPI struct {
	apiBase
	shape *graph.Compiled[nodes.FlowState]
}

// settings are a run's: review (plan approval) from its configurable, or,
// when it does not say, as the thread's flow started — a run that answers
// a plan review or continues a reviewed flow needs the graph with the
// review in it.
func (a *flowAPI) settings(ctx context.Context, cfg agentserver.RunConfig) (app.Settings, error) {
	review := a.reviewed(ctx, cfg.ThreadID)
	if raw, ok := cfg.Configurable["review"]; ok {
		if err := json.Unmarshal(raw, &review); err != nil {
			return app.Settings{}, fmt.Errorf("%w: review is true or false", agentserver.ErrBadConfig)
		}
	}
	set, err := a.eng.Settings(RunRequest{Kind: runstore.KindFlow, Review: review})
	if err != nil {
		return set, fmt.Errorf("%w: %w", agentserver.ErrBadConfig, err)
	}
	return set, nil
}

// reviewed says whether the flow on thread started with plan review: a
// plan was approved, or one waits for it.
func (a *flowAPI) reviewed(ctx context.Context, thread string) bool {
	snap, err := a.shape.State(ctx, graph.Thread(thread))
	if err != nil {
		return false
	}
	if snap.State.Reviewed >= 0 {
		return true
	}
	for _, pi := range snap.Interrupts {
		if pi.Node == nodes.FlowNodeApprove {
			return true
		}
	}
	return false
}

func (a *flowAPI) input(cfg agentserver.RunConfig, raw json.RawMessage) (nodes.FlowState, []graph.Write[nodes.FlowState], error) {
	task, err := taskInput(a.apiBase, a.shape, "a flow", cfg, raw)
	return nodes.FlowState{Task: task, Reviewed: -1}, nil, err
}

func (a *flowAPI) build(ctx context.Context, cfg agentserver.RunConfig) (agentserver.RunSetup[nodes.FlowState], error) {
	set, err := a.settings(ctx, cfg)
	if err != nil {
		return agentserver.RunSetup[nodes.FlowState]{}, err
	}
	ctx, end := traceAPIRun(ctx, a.tel, telemetry.RunKindFlow, cfg)
	fr, err := a.eng.Flow(ctx, set, a.cp)
	if err != nil {
		return agentserver.RunSetup[nodes.FlowState]{}, a.setupFailed(end, "flow", err)
	}
	tl := &flowTimeline{start: time.Now(), models: fr.Models, prices: fr.Prices, progress: a.records.progress(cfg.RunID)}
	// The agent steps' tool calls with side effects are recorded before and
	// after they run: a run that continues this one does not repeat them.
	ctx = nodes.WithCallJournal(ctx, a.records.journal(ctx, cfg))
	var final *nodes.FlowState
	return agentserver.RunSetup[nodes.FlowState]{Graph: fr.Flow.Graph(), Observe: tl.observe, Close: fr.Close, Context: ctx,
		End: func(status string, err error) {
			tl.progress.flush()
			end(status, err, tl.spent(), fr.Models, fr.Prices)
			if final != nil {
				a.records.report(context.WithoutCancel(ctx), cfg.RunID, final.Result())
			}
		},
		// A flow whose steps were not all done did not do its task, as
		// research flow's exit status says: the run fails, what it did in
		// its values. A rejected plan is the person's choice: not a failure.
		Outcome: func(s nodes.FlowState) error {
			final = &s
			if s.Status == nodes.FlowPartial {
				return errors.New("the flow ended with steps blocked or not done (status partial)")
			}
			return nil
		}}, nil
}

// flowTimeline turns a flow's events into its timeline.
type flowTimeline struct {
	start    time.Time
	models   map[string]string
	prices   llm.Prices
	progress *spendingWriter
	mu       sync.Mutex
	usage    llm.UsageByRole // the state's, as of the last step
}

// spent is what the flow has spent, as of its last step.
func (t *flowTimeline) spent() llm.UsageByRole {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.usage
}

func (t *flowTimeline) observe(ev graph.Event[nodes.FlowState], out agentserver.Emitter) {
	if sp, ok := t.show(ev, out); ok {
		t.progress.record(sp) // not under mu: it writes to the run store
	}
}

// show adds what ev shows to the timeline, and says what the run has spent
// when ev changed it.
func (t *flowTimeline) show(ev graph.Event[nodes.FlowState], out agentserver.Emitter) (spending, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ev.Kind == graph.EventStep {
		t.usage = ev.State.Usage
		return spent(out, t.usage, t.models, t.prices), true
	}
	if ev.Kind != graph.EventCustom {
		return spending{}, false
	}
	fe, ok := ev.Value.(nodes.FlowEvent)
	if !ok {
		return spending{}, false
	}
	act, ok := flowActivity(fe)
	if !ok {
		return spending{}, false
	}
	act.ElapsedMS = time.Since(t.start).Milliseconds()
	act.Tokens = app.Tokens(t.usage.Total().Usage)
	out.Custom(customEvent{Type: "activity", Activity: &act})
	return spending{}, false
}

// flowActivity is a flow event as a timeline entry (flow_plan,
// flow_approved, flow_step_start, flow_step_done, flow_revised, flow_done;
// an executor's own events as theirs: agent_… or research activities);
// false for what the timeline does not show (the summary's tokens).
func flowActivity(ev nodes.FlowEvent) (Activity, bool) {
	act := Activity{Kind: "flow_" + string(ev.Kind), Step: ev.Step, Status: string(ev.Status)}
	switch ev.Kind {
	case nodes.FlowEventPlan, nodes.FlowEventRevised, nodes.FlowEventApproved:
		var b strings.Builder
		switch ev.Kind {
		case nodes.FlowEventPlan:
			b.WriteString("Plan")
		case nodes.FlowEventRevised:
			fmt.Fprintf(&b, "Revised plan (revision %d)", ev.Revision)
		default:
			b.WriteString("Plan approved")
		}
		if ev.Plan != nil {
			fmt.Fprintf(&b, ": %s", app.OneLine(ev.Plan.Title, 120))
			for i, s := range ev.Plan.Steps {
				fmt.Fprintf(&b, "\n%d. %s %s", i, s.Status.Mark(), app.OneLine(s.Text, 200))
			}
		}
		act.Text = b.String()
	case nodes.FlowEventStepStart:
		act.Text = fmt.Sprintf("Step %d [%s] %s: in progress", ev.Step, ev.Executor, app.OneLine(ev.Text, 160))
	case nodes.FlowEventStepDone:
		if ev.Status == tools.StepBlocked {
			act.Text = fmt.Sprintf("Step %d [%s]: blocked — %s", ev.Step, ev.Executor, app.OneLine(ev.Reason, 200))
		} else {
			act.Text = fmt.Sprintf("Step %d [%s]: completed — %s", ev.Step, ev.Executor, app.OneLine(ev.Output, 160))
			act.Output = clipRunes(app.CleanText(ev.Output), maxToolOutput)
		}
	case nodes.FlowEventDone:
		act.Text, act.Status = "Summary written", string(ev.Result)
	case nodes.FlowEventExecutor:
		switch e := ev.Event.(type) {
		case nodes.AgentEvent:
			a := agentActivity(e)
			a.Step = ev.Step
			return a, true
		case research.Activity:
			if e.Kind == research.ActivityToken {
				return Activity{}, false
			}
			return researchActivity(e), true
		}
		return Activity{}, false
	default:
		return Activity{}, false
	}
	return act, true
}

// showFlowInterrupt shows a plan review as LangChain's HITLRequest (its
// PlanReview kept beside it); an agent step's question or tool approval as
// the agent's.
func showFlowInterrupt(pi graph.PendingInterrupt) any {
	r, err := graph.PayloadOf[nodes.PlanReview](pi)
	if err != nil || len(r.Plan.Steps) == 0 {
		return showQuestion(pi)
	}
	steps := make([]string, len(r.Plan.Steps))
	for i, s := range r.Plan.Steps {
		steps[i] = s.Text
	}
	args, _ := json.Marshal(map[string]any{"title": r.Plan.Title, "steps": steps})
	desc := fmt.Sprintf("Approve the plan %q?", r.Plan.Title)
	if r.Revision > 0 {
		desc = fmt.Sprintf("Approve the revised plan %q (revision %d)?", r.Plan.Title, r.Revision)
	}
	return planRequest{hitlRequest: hitlRequest{
		ActionRequests: []actionRequest{{Name: actionApprovePlan, Args: args, Description: desc}},
		ReviewConfigs:  []reviewConfig{{ActionName: actionApprovePlan, AllowedDecisions: []string{"approve", "edit", "reject"}}},
	}, PlanReview: r}
}

// planRequest is a plan review as LangChain's HITLRequest.
type planRequest struct {
	hitlRequest
	nodes.PlanReview
}

// answerFlowInterrupt reads the answer to a plan review — Agent Chat UI's
// decisions, a PlanApproval, or text as research resume --answer takes it
// (app.ParsePlanAnswer) — or to an agent step's interrupt, as the agent's.
func answerFlowInterrupt(pi graph.PendingInterrupt, raw json.RawMessage) (any, error) {
	if r, err := graph.PayloadOf[nodes.PlanReview](pi); err != nil || len(r.Plan.Steps) == 0 {
		return answerQuestion(pi, raw)
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return app.ParsePlanAnswer(text), nil
	}
	var hitl struct {
		Decisions []struct {
			Type         string `json:"type"`
			Message      string `json:"message"`
			EditedAction *struct {
				Args struct {
					Title string          `json:"title"`
					Steps json.RawMessage `json:"steps"`
				} `json:"args"`
			} `json:"edited_action"`
		} `json:"decisions"`
	}
	if json.Unmarshal(raw, &hitl) == nil && len(hitl.Decisions) > 0 {
		d := hitl.Decisions[0]
		switch d.Type {
		case "approve":
			return nodes.PlanApproval{}, nil
		case "reject":
			return nodes.PlanApproval{Reject: true, Reason: d.Message}, nil
		case "edit":
			var steps []string
			if d.EditedAction != nil {
				var err error
				if steps, err = editedList(d.EditedAction.Args.Steps); err != nil {
					return nil, fmt.Errorf("edited_action.args.steps: %w", err)
				}
			}
			if len(steps) == 0 {
				return nil, errors.New("an edit decision needs edited_action.args.steps: the steps for what is not done yet")
			}
			return nodes.PlanApproval{Title: d.EditedAction.Args.Title, Steps: steps}, nil
		}
		return nil, fmt.Errorf("decision %q: use approve, edit or reject", d.Type)
	}
	var ap nodes.PlanApproval
	if err := json.Unmarshal(raw, &ap); err != nil {
		return nil, errors.New("the answer to a plan review is Agent Chat UI's decisions, {steps, title, reject, reason}, or text: approve, no: REASON, or new steps separated by ';'")
	}
	return ap, nil
}

// serve adds the flow to api. The graph that reads and edits the threads
// has the plan review in it, so that it reads every flow's checkpoints.
func (a *flowAPI) serve(ctx context.Context, api *agentserver.Server) (func(), error) {
	set, err := a.eng.Settings(RunRequest{Kind: runstore.KindFlow, Review: true})
	if err != nil {
		return nil, err
	}
	shape, err := a.eng.Flow(ctx, set, a.cp)
	if err != nil {
		return nil, fmt.Errorf("setting up the flow graph: %s", a.redact(err.Error()))
	}
	a.shape = shape.Flow.Graph()
	return serveGraph(api, graphFlow, a.shape, shape.Close,
		agentserver.Description[nodes.FlowState]("A planning flow: a plan of steps, each done by the agent, the researcher or the browser, and a cited summary; one task per thread"),
		agentserver.AssistantMetadata[nodes.FlowState](a.metadata),
		agentserver.Values(flowValuesOf),
		agentserver.Input(a.input),
		agentserver.Interrupts[nodes.FlowState](showFlowInterrupt, answerFlowInterrupt),
		agentserver.Build(a.build))
}
