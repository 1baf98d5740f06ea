package server

import (
	"bytes"
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
	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/telemetry"
)

// The agent as the assistant "agent" (when serve.allow_agent): its input
// is the task as a human message, and a thread takes one task; its values
// are the task, then the conversation — ai messages with their tool_calls,
// tool messages with the tools' results — and the answer as the last ai
// message, with its cited sources; its steps are custom activity events
// and its cost a custom cost event; its ask_human is an interrupt whose
// value is {question, step} and whose resume is the answer text (or Agent
// Chat UI's {decisions: [{type: "reject", message}]}, whose message is the
// answer).

const graphAgent = "agent"

// agentValues are an agent thread's values as clients see them.
type agentValues struct {
	Messages []agentserver.Message `json:"messages"`
	Task     string                `json:"task"`
	Steps    int                   `json:"steps"`
	Status   nodes.AgentStatus     `json:"status,omitempty"`
	Answer   string                `json:"answer,omitempty"`
	Sources  []citation.Source     `json:"sources"`
	Dropped  int                   `json:"dropped_citations"`
	Usage    llm.UsageByRole       `json:"usage,omitempty"`
}

func agentValuesOf(s nodes.AgentState) any {
	msgs := append([]schemas.Message{schemas.UserMessage(s.Task)}, s.Messages...)
	if s.Answer != "" && (len(s.Messages) == 0 || s.Messages[len(s.Messages)-1].Content != s.Answer) {
		msgs = append(msgs, schemas.AssistantMessage(s.Answer))
	}
	v := agentValues{Messages: langchainMessages(msgs), Task: s.Task, Steps: s.Steps, Status: s.Status, Answer: s.Answer,
		Sources: s.Cited, Dropped: s.Dropped, Usage: s.Usage}
	if v.Sources == nil {
		v.Sources = []citation.Source{}
	}
	return v
}

// agentAPI serves the agent.
type agentAPI struct {
	apiBase
	shape *graph.Compiled[nodes.AgentState]
}

func (a *agentAPI) settings() (app.Settings, error) {
	return a.eng.Settings(RunRequest{Kind: runstore.KindAgent})
}

func (a *agentAPI) input(cfg agentserver.RunConfig, raw json.RawMessage) (nodes.AgentState, []graph.Write[nodes.AgentState], error) {
	task, err := taskInput(a.apiBase, a.shape, "an agent", cfg, raw)
	return nodes.AgentState{Task: task}, nil, err
}

func (a *agentAPI) build(ctx context.Context, cfg agentserver.RunConfig) (agentserver.RunSetup[nodes.AgentState], error) {
	set, err := a.settings()
	if err != nil {
		return agentserver.RunSetup[nodes.AgentState]{}, err
	}
	ctx, end := traceAPIRun(ctx, a.tel, telemetry.RunKindAgent, cfg)
	ar, err := a.eng.Agent(ctx, set, a.cp)
	if err != nil {
		return agentserver.RunSetup[nodes.AgentState]{}, a.setupFailed(end, "agent", err)
	}
	tl := &agentTimeline{start: time.Now(), meter: ar.Meter, models: map[string]string{llm.RoleAgent: ar.Model}, prices: ar.Prices,
		progress: a.records.progress(cfg.RunID)}
	// Its tool calls with side effects are recorded before and after they
	// run: a run that continues this one does not repeat them blindly.
	ctx = nodes.WithCallJournal(ctx, a.records.journal(ctx, cfg))
	var final *nodes.AgentState // the state the run ended in, when it did
	return agentserver.RunSetup[nodes.AgentState]{Graph: ar.Agent.Graph(), Observe: tl.observe, Close: ar.Close, Context: ctx,
		End: func(status string, err error) {
			tl.progress.flush()
			end(status, err, tl.usage(), tl.models, tl.prices)
			if final != nil {
				// Its answer, for research show, as research agent stores it.
				doc := app.PricedAgentResultDoc(app.RunRef{RunID: cfg.RunID, ThreadID: cfg.ThreadID}, final.Result(), ar.Model, ar.Prices, err)
				a.records.report(context.WithoutCancel(ctx), cfg.RunID, doc)
			}
		},
		// An agent that gave up, ran out of steps or got stuck did not do
		// its task: the run fails, its best effort in the state.
		Outcome: func(s nodes.AgentState) error {
			final = &s
			maxSteps := 0
			if set.Agent != nil {
				maxSteps = set.Agent.MaxSteps
			}
			if st, why := app.AgentOutcome(&nodes.AgentResult{Status: s.Status, Missing: s.Missing}, maxSteps); st == runstore.StatusFailed {
				return errors.New(why)
			}
			return nil
		}}, nil
}

// usage is what the task has spent so far: its earlier runs (before an
// ask_human was answered), then this run's calls.
func (t *agentTimeline) usage() llm.UsageByRole {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.usageLocked()
}

func (t *agentTimeline) usageLocked() llm.UsageByRole {
	if t.meter == nil {
		return t.base
	}
	return t.base.Merge(t.meter.Snapshot())
}

// agentTimeline turns an agent's steps into its timeline.
type agentTimeline struct {
	start    time.Time
	meter    *llm.Meter
	models   map[string]string
	prices   llm.Prices
	progress *spendingWriter
	mu       sync.Mutex
	// base is the task's usage before this run (its state's at the run's
	// first event); based says it is read.
	base  llm.UsageByRole
	based bool
}

func (t *agentTimeline) observe(ev graph.Event[nodes.AgentState], out agentserver.Emitter) {
	if sp, ok := t.show(ev, out); ok {
		t.progress.record(sp) // not under mu: it writes to the run store
	}
}

// show adds what ev shows to the timeline, and says what the run has spent
// when ev changed it.
func (t *agentTimeline) show(ev graph.Event[nodes.AgentState], out agentserver.Emitter) (spending, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.based {
		t.base, t.based = ev.State.Usage, true
	}
	if ev.Kind != graph.EventCustom {
		return spending{}, false
	}
	ae, ok := ev.Value.(nodes.AgentEvent)
	if !ok {
		return spending{}, false
	}
	act := agentActivity(ae)
	act.ElapsedMS = time.Since(t.start).Milliseconds()
	if t.meter != nil {
		usage := t.usageLocked()
		act.Tokens = app.Tokens(usage.Total().Usage)
		out.Custom(customEvent{Type: "activity", Activity: &act})
		return spent(out, usage, t.models, t.prices), true
	}
	out.Custom(customEvent{Type: "activity", Activity: &act})
	return spending{}, false
}

func showQuestion(pi graph.PendingInterrupt) any {
	if ap, ok := toolApproval(pi); ok {
		ap.Question = app.CleanText(ap.Question)
		args := ap.Args
		if !json.Valid(args) || len(args) == 0 || args[0] != '{' {
			args, _ = json.Marshal(map[string]json.RawMessage{"arguments": ap.Args})
		}
		return approvalRequest{hitlRequest: hitlRequest{
			ActionRequests: []actionRequest{{Name: ap.Tool, Args: args, Description: ap.Question}},
			ReviewConfigs:  []reviewConfig{{ActionName: ap.Tool, AllowedDecisions: []string{"approve", "edit", "reject"}}},
		}, ToolApproval: ap}
	}
	q, err := graph.PayloadOf[nodes.HumanQuestion](pi)
	if err != nil {
		return pi.Payload
	}
	q.Question = app.CleanText(q.Question)
	args, _ := json.Marshal(questionArgs{Question: q.Question})
	return questionRequest{hitlRequest: hitlRequest{
		ActionRequests: []actionRequest{{Name: actionAskHuman, Args: args, Description: q.Question}},
		ReviewConfigs:  []reviewConfig{{ActionName: actionAskHuman, AllowedDecisions: []string{"edit", "reject"}}},
	}, HumanQuestion: q}
}

// actionAskHuman is the action of an agent's question, for Agent Chat UI:
// its answer is the edited args.answer, or a reject's message.
const actionAskHuman = "ask_human"

type questionArgs struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// questionRequest is an agent's question (nodes.HumanQuestion, whose
// fields it keeps) as LangChain's HITLRequest, so that Agent Chat UI
// offers to answer it.
type questionRequest struct {
	hitlRequest
	nodes.HumanQuestion
}

// approvalRequest is an agent's request to run a tool call with side
// effects (nodes.ToolApproval, whose question and fields it keeps) as
// LangChain's HITLRequest, so that Agent Chat UI offers approve, edit and
// reject.
type approvalRequest struct {
	hitlRequest
	nodes.ToolApproval
}

// toolApproval is pi's request to approve a tool call, if it is one.
func toolApproval(pi graph.PendingInterrupt) (nodes.ToolApproval, bool) {
	ap, err := graph.PayloadOf[nodes.ToolApproval](pi)
	return ap, err == nil && ap.Tool != ""
}

// answerQuestion reads the answer to an agent's question: text, {answer},
// or Agent Chat UI's decisions — on a tool call, approve, reject with its
// message, or edit with the edited arguments, as nodes.ParseToolDecision
// reads them; on a question, a reject's message or an edit's args.answer.
func answerQuestion(pi graph.PendingInterrupt, raw json.RawMessage) (any, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text, nil
	}
	var obj struct {
		Answer    *string `json:"answer"`
		Decisions []struct {
			Type         string `json:"type"`
			Message      string `json:"message"`
			EditedAction *struct {
				Args json.RawMessage `json:"args"`
			} `json:"edited_action"`
		} `json:"decisions"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || (obj.Answer == nil && len(obj.Decisions) == 0) {
		return nil, errors.New("the answer to an agent's question is text (or {answer: text}, or Agent Chat UI's decisions)")
	}
	if obj.Answer != nil {
		return *obj.Answer, nil
	}
	d := obj.Decisions[0]
	var edited json.RawMessage
	if d.EditedAction != nil {
		edited = d.EditedAction.Args
	}
	if ap, ok := toolApproval(pi); ok {
		switch d.Type {
		case "approve":
			return string(nodes.ToolApprove), nil
		case "reject":
			return strings.TrimSpace(string(nodes.ToolReject) + ": " + d.Message), nil
		case "edit":
			if len(edited) == 0 || edited[0] != '{' {
				return nil, errors.New("an edit decision needs edited_action.args: the tool call's arguments as a JSON object")
			}
			return string(nodes.ToolEdit) + ": " + string(restoreArgKinds(ap.Args, edited)), nil
		}
		return nil, fmt.Errorf("decision %q: use approve, edit or reject", d.Type)
	}
	var answer struct {
		Answer string `json:"answer"`
	}
	switch {
	case d.Message != "":
		return d.Message, nil
	case json.Unmarshal(edited, &answer) == nil:
		return answer.Answer, nil
	}
	return nil, errors.New("the answer to an agent's question is text: a decision's message, or an edit's args.answer")
}

// restoreArgKinds undoes what Agent Chat UI's edit form does to a tool
// call's arguments: it holds each one as text, so an argument the model
// gave as a number, a boolean, a list or an object comes back as a string
// ("5", "true", "[\"a\"]"). Such a string becomes the JSON it spells when
// that is of the original argument's kind; anything else (an argument
// that was text, a new one, a string that spells nothing of that kind)
// stays as it was sent, for the tool to judge.
func restoreArgKinds(original, edited json.RawMessage) json.RawMessage {
	var was, now map[string]json.RawMessage
	if json.Unmarshal(original, &was) != nil || json.Unmarshal(edited, &now) != nil {
		return edited
	}
	changed := false
	for k, v := range now {
		kind := jsonKind(was[k])
		var text string
		if kind == 0 || kind == '"' || jsonKind(v) != '"' || json.Unmarshal(v, &text) != nil {
			continue
		}
		spelled := json.RawMessage(strings.TrimSpace(text))
		if json.Valid(spelled) && jsonKind(spelled) == kind {
			now[k], changed = spelled, true
		}
	}
	if !changed {
		return edited
	}
	out, err := json.Marshal(now)
	if err != nil {
		return edited
	}
	return out
}

// jsonKind is a JSON value's kind by its first byte: '"', '{', '[', 't'
// (booleans), 'n' (null) or '0' (numbers); 0 for nothing.
func jsonKind(v json.RawMessage) byte {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return 0
	}
	switch c := v[0]; {
	case c == 'f':
		return 't'
	case c == '-' || (c >= '0' && c <= '9'):
		return '0'
	default:
		return c
	}
}

// serveAgent adds the agent to api when the server allows agent runs.
func (a *agentAPI) serve(ctx context.Context, api *agentserver.Server) (func(), error) {
	set, err := a.settings()
	if err != nil {
		return nil, err
	}
	shape, err := a.eng.Agent(ctx, set, a.cp)
	if err != nil {
		return nil, fmt.Errorf("setting up the agent graph: %s", a.redact(err.Error()))
	}
	a.shape = shape.Agent.Graph()
	return serveGraph(api, graphAgent, a.shape, shape.Close,
		agentserver.Description[nodes.AgentState]("A ReAct agent with the server's tools: one task per thread"),
		agentserver.AssistantMetadata[nodes.AgentState](a.metadata),
		agentserver.Values(agentValuesOf),
		agentserver.Input(a.input),
		agentserver.Interrupts[nodes.AgentState](showQuestion, answerQuestion),
		agentserver.Build(a.build))
}
