package nodes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/tools"
)

// Side effects of the agent's tool calls.
//
// A call with side effects (tools.EffectOf: bash, python_execute, the
// editor's writes, MCP tools not annotated read-only) is never repeated
// blindly. With a CallJournal in the run's context (WithCallJournal), act
// records the call's intent before it runs and its result when it ends —
// the local-message-table rule the graph follows for its tasks, applied
// inside the act step, whose calls run together. When a run is resumed
// after a crash, a call whose result is recorded is not run again (its
// result is used), and a call with an intent but no result — its process
// died while it ran — is not run again either: the model is told its
// outcome is unknown, with what the tool can show of it (the editor's view
// of the file), or, with AgentConfig.ApproveTools, the person is asked.
// Read-only calls are simply run again.
//
// With ApproveTools, each effectful call waits for a person's decision
// before it runs: an interrupt at the ask_human node (AgentNodeAsk), whose
// payload is a ToolApproval and whose answer is text (ParseToolDecision).
// Every call of the model's reply still gets its tool message — a rejected
// call one that says so — as providers require.

// CallJournal keeps records of a run's calls under keys that name them
// (deepgraph's run store is one, runstore.Store.RecordCall; so is the
// journal of a research run, research.CallJournal). A key is written once.
type CallJournal interface {
	// Recall returns the record kept under key; ok is false when there is
	// none.
	Recall(ctx context.Context, key string) (data []byte, ok bool, err error)
	// Record keeps data (a JSON document) under key.
	Record(ctx context.Context, key string, data []byte) error
}

type journalKey struct{}

// WithCallJournal returns ctx with j: an agent run under it (Run, Resume,
// AgentNode, or its graph run directly) records its effectful tool calls in
// j before they run and when they end, so that a resumed run does not
// repeat them blindly. Use one journal per run (per thread): keys name a
// call by its step, its place in the step and its ID.
func WithCallJournal(ctx context.Context, j CallJournal) context.Context {
	return context.WithValue(ctx, journalKey{}, j)
}

// prefixedJournal keeps the records of one of several agent runs that
// share a journal (the steps of a flow) under keys of their own.
type prefixedJournal struct {
	j      CallJournal
	prefix string
}

func (p prefixedJournal) Recall(ctx context.Context, key string) ([]byte, bool, error) {
	return p.j.Recall(ctx, p.prefix+key)
}

func (p prefixedJournal) Record(ctx context.Context, key string, data []byte) error {
	return p.j.Record(ctx, p.prefix+key, data)
}

func journalOf(ctx context.Context) CallJournal {
	j, _ := ctx.Value(journalKey{}).(CallJournal)
	return j
}

// ToolApproval is the payload of the interrupt that asks a person to
// approve an effectful tool call (AgentConfig.ApproveTools). Its question
// and step read as a HumanQuestion's, so a client that shows the agent's
// questions shows it too; the answer is text (see ParseToolDecision).
type ToolApproval struct {
	HumanQuestion
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	CallID string          `json:"call_id"`
	// Unknown says the call ran before, in a run that stopped before it
	// ended: its outcome is unknown, and approving runs it again.
	Unknown bool `json:"unknown_outcome,omitempty"`
}

// ToolVerdict is a person's decision on a tool call.
type ToolVerdict string

// The decisions on a tool call.
const (
	ToolApprove ToolVerdict = "approve" // run it
	ToolEdit    ToolVerdict = "edit"    // run it with other arguments
	ToolReject  ToolVerdict = "reject"  // do not run it; the model is told why
)

// ToolDecision is a person's answer to a ToolApproval.
type ToolDecision struct {
	Verdict ToolVerdict
	Args    json.RawMessage // ToolEdit: the arguments to run the call with
	Reason  string          // ToolReject: why, for the model
}

// approvalHelp says how to answer a ToolApproval.
const approvalHelp = `Answer "approve" (or "yes"), "reject: REASON" (or "no: REASON"), or "edit: {JSON arguments}" to run it with other arguments.`

// ParseToolDecision reads the answer to a ToolApproval: "approve", "yes",
// "y" or "ok" approve; "reject", "no" or "n", optionally followed by ":"
// and a reason, reject; "edit" followed by a JSON object runs the call with
// that object as its arguments. Case and surrounding spaces do not matter.
func ParseToolDecision(answer string) (ToolDecision, error) {
	text := strings.TrimSpace(answer)
	word, rest := text, ""
	if i := strings.IndexAny(text, ": \t\n{"); i >= 0 {
		word, rest = text[:i], strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text[i:]), ":"))
	}
	switch strings.ToLower(word) {
	case "approve", "approved", "yes", "y", "ok":
		if rest == "" {
			return ToolDecision{Verdict: ToolApprove}, nil
		}
	case "reject", "rejected", "no", "n":
		if rest == "" {
			rest = "no reason given"
		}
		return ToolDecision{Verdict: ToolReject, Reason: rest}, nil
	case "edit":
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(rest), &obj); err != nil || obj == nil {
			return ToolDecision{}, fmt.Errorf("the arguments after \"edit:\" are not a JSON object (%q)", cutText(rest, 200))
		}
		return ToolDecision{Verdict: ToolEdit, Args: json.RawMessage(rest)}, nil
	}
	return ToolDecision{}, fmt.Errorf("%q is not a decision", cutText(text, 200))
}

// approve asks the person to decide on call (an interrupt), asking again,
// with the reason, while the answer cannot be read.
func (a *Agent) approve(ctx context.Context, call schemas.ToolCall, step int, unknown bool) (ToolDecision, error) {
	args := canonicalJSON(call.Arguments)
	var q string
	if unknown {
		q = fmt.Sprintf("The run stopped while the tool call %s %s was running: its outcome is unknown. Run it again?", call.Name, cutText(args, 2000))
	} else {
		q = fmt.Sprintf("The agent wants to run %s %s. Allow it?", call.Name, cutText(args, 2000))
	}
	p := ToolApproval{HumanQuestion: HumanQuestion{Question: q + " " + approvalHelp, Step: step},
		Tool: call.Name, Args: json.RawMessage(args), CallID: call.ID, Unknown: unknown}
	for {
		answer, err := graph.Interrupt[string](ctx, p)
		if err != nil {
			return ToolDecision{}, err
		}
		d, err := ParseToolDecision(answer)
		if err == nil {
			return d, nil
		}
		p.Question = fmt.Sprintf("Your answer could not be read: %v. %s %s", err, q, approvalHelp)
	}
}

// decided applies d to call: the call to run, or, when d rejects it, nil
// and the call's result, which says why.
func decided(call schemas.ToolCall, d ToolDecision) (*schemas.ToolCall, tools.Result) {
	switch d.Verdict {
	case ToolReject:
		return nil, tools.Failf("not run: the person who approves this agent's tool calls rejected it: %s", d.Reason)
	case ToolEdit:
		call.Arguments = d.Args
	}
	return &call, tools.Result{}
}

// editNote tells the model that the person changed the arguments of call
// before it ran: call's arguments differ from those of the model's last
// reply.
func editNote(msgs []schemas.Message, call schemas.ToolCall) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != schemas.Assistant {
			continue
		}
		for _, c := range msgs[i].ToolCalls {
			if c.ID == call.ID && canonicalJSON(c.Arguments) != canonicalJSON(call.Arguments) {
				return fmt.Sprintf("The person who approves this agent's tool calls changed the arguments to %s before it ran.\n", cutText(canonicalJSON(call.Arguments), 2000))
			}
		}
		return ""
	}
	return ""
}

// effectful reports whether call may have side effects, with the tools of
// the agent's last step.
func (a *Agent) effectful(call schemas.ToolCall) bool {
	a.mu.Lock()
	set := a.merged
	a.mu.Unlock()
	if set == nil {
		set = a.tools
	}
	return set.Effect(call).Effectful
}

// callKey names call, the i-th of step, in the run's journal.
func callKey(step, i int, call schemas.ToolCall) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%d\x00%d\x00%s\x00%s", step, i, call.ID, call.Name))
	return "agent-tool:" + hex.EncodeToString(sum[:16])
}

const (
	intentSuffix = ":intent"
	resultSuffix = ":result"
)

// intentRecord is what the journal keeps before an effectful call runs.
type intentRecord struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
	Time time.Time       `json:"time"`
}

// actCall is one call of an act step: the call to run, or its result when
// it is settled without running.
type actCall struct {
	call    schemas.ToolCall
	key     string // its journal key, for an effectful call with a journal
	res     tools.Result
	settled bool
}

// prepare settles the calls of an act step that must not run: an effectful
// call whose result the journal holds (it ran before the run stopped) gets
// that result, and one whose intent has no result gets an unknown outcome
// (or, with ApproveTools, the person's decision). It makes no change:
// its interrupts may run it again.
func (a *Agent) prepare(ctx context.Context, s AgentState, set *tools.Collection) ([]actCall, error) {
	j := journalOf(ctx)
	out := make([]actCall, len(s.Calls))
	for i, call := range s.Calls {
		out[i].call = call
		eff := set.Effect(call)
		if j == nil || !eff.Effectful {
			continue
		}
		key := callKey(s.Steps, i, call)
		out[i].key = key
		result, done, err := j.Recall(ctx, key+resultSuffix)
		var ran bool
		if err == nil && !done {
			_, ran, err = j.Recall(ctx, key+intentSuffix)
		}
		var res tools.Result
		switch {
		case err != nil:
			out[i].res, out[i].settled = tools.Failf("the call to %s was not run: the run's record, which says whether it ran before, could not be read (%v)", call.Name, err), true
			continue
		case done && json.Unmarshal(result, &res) == nil:
			out[i].res, out[i].settled = res, true
			continue
		case !done && !ran:
			continue
		}
		if !a.cfg.ApproveTools {
			out[i].res, out[i].settled = unknownOutcome(ctx, set, call, eff), true
			continue
		}
		d, err := a.approve(ctx, call, s.Steps, true)
		if err != nil {
			return nil, err
		}
		if approved, res := decided(call, d); approved != nil {
			out[i].call = *approved
		} else {
			res.Error += ". " + unknownText
			out[i].res, out[i].settled = res, true
		}
	}
	return out, nil
}

const unknownText = "The run stopped (it was killed or crashed) while this call was running, so its outcome is unknown; it was not run again, so that its effects are not repeated. Check what it did before you repeat it"

// unknownOutcome is the result of an effectful call that was running when
// the run stopped: its outcome is unknown, and what the tool can show of
// it (eff.Check) is shown.
func unknownOutcome(ctx context.Context, set *tools.Collection, call schemas.ToolCall, eff tools.Effect) tools.Result {
	if eff.Check == nil {
		return tools.Failf("%s, with a read-only call (list or read what it would change).", unknownText)
	}
	check := schemas.ToolCall{ID: call.ID + "-check", Name: call.Name, Arguments: eff.Check}
	res, _ := set.Execute(ctx, check)
	return tools.Result{Error: unknownText + ". What it would have changed is now (" + call.Name + " " + string(eff.Check) + "):", Output: res.Content()}
}

// execute runs an act call: an effectful one with a journal is recorded
// before it runs (its intent) and when it ends (its result), so that a
// resumed run does not repeat it blindly.
func execute(ctx context.Context, set *tools.Collection, c actCall) tools.Result {
	j := journalOf(ctx)
	if c.key == "" || j == nil {
		return run(ctx, set, c.call)
	}
	if err := ctx.Err(); err != nil {
		return tools.Failf("the call to %s was not run: the run was cancelled", c.call.Name)
	}
	intent, _ := json.Marshal(intentRecord{Tool: c.call.Name, Args: c.call.Arguments, Time: time.Now().UTC()})
	if err := j.Record(ctx, c.key+intentSuffix, intent); err != nil {
		return tools.Failf("the call to %s was not run: it could not be recorded before it ran (%v), and a call with side effects is not run unrecorded", c.call.Name, err)
	}
	res := run(ctx, set, c.call)
	if data, merr := json.Marshal(res); merr == nil {
		// Kept even when the run is being cancelled: the call ran. A
		// result that cannot be kept leaves the outcome unknown to a
		// resumed run, which is the safe side.
		_ = j.Record(context.WithoutCancel(ctx), c.key+resultSuffix, data)
	}
	return res
}

// run runs call; an infrastructure failure is shown to the model as the
// call's failure.
func run(ctx context.Context, set *tools.Collection, call schemas.ToolCall) tools.Result {
	res, err := set.Execute(ctx, call)
	if err != nil {
		res = tools.Failf("%v", err)
	}
	return res
}

// errNoApproval: ApproveTools without a Checkpointer.
var errNoApproval = errors.New("nodes: agent: ApproveTools pauses the run for each approval, which needs a Checkpointer")
