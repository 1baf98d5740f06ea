package nodes_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/tools"
)

// effectTool is a tool with side effects (tools.SideEffects): it appends
// its argument to a log.
type effectTool struct {
	name string
	mu   sync.Mutex
	ran  []string
	// during, when set, runs inside each call.
	during func(ctx context.Context)
}

func (e *effectTool) Name() string                   { return e.name }
func (e *effectTool) Description() string            { return "Appends a line." }
func (e *effectTool) Parameters() *jsonschema.Schema { return nil }
func (e *effectTool) Effect(json.RawMessage) tools.Effect {
	return tools.Effect{Effectful: true}
}

func (e *effectTool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	var a struct {
		Line string `json:"line"`
	}
	_ = json.Unmarshal(args, &a)
	if e.during != nil {
		e.during(ctx)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ran = append(e.ran, a.Line)
	return tools.Text("appended " + a.Line), nil
}

func (e *effectTool) lines() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.ran...)
}

func appendCall(line string) schemas.ToolCall {
	return fake.ToolCall("append", map[string]string{"line": line})
}

// toolMessages are the tool messages of a model call, by tool call ID.
func toolMessages(msgs []schemas.Message) map[string]string {
	out := map[string]string{}
	for _, m := range msgs {
		if m.Role == schemas.Tool {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

func TestParseToolDecision(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want nodes.ToolDecision
		err  string
	}{
		{in: "approve", want: nodes.ToolDecision{Verdict: nodes.ToolApprove}},
		{in: " Yes ", want: nodes.ToolDecision{Verdict: nodes.ToolApprove}},
		{in: "ok", want: nodes.ToolDecision{Verdict: nodes.ToolApprove}},
		{in: "reject: it deletes my notes", want: nodes.ToolDecision{Verdict: nodes.ToolReject, Reason: "it deletes my notes"}},
		{in: "no", want: nodes.ToolDecision{Verdict: nodes.ToolReject, Reason: "no reason given"}},
		{in: "No because", want: nodes.ToolDecision{Verdict: nodes.ToolReject, Reason: "because"}},
		{in: `edit: {"line": "b"}`, want: nodes.ToolDecision{Verdict: nodes.ToolEdit, Args: json.RawMessage(`{"line": "b"}`)}},
		{in: `edit {"line": "b"}`, want: nodes.ToolDecision{Verdict: nodes.ToolEdit, Args: json.RawMessage(`{"line": "b"}`)}},
		{in: `edit: [1]`, err: "not a JSON object"},
		{in: `edit`, err: "not a JSON object"},
		{in: "maybe", err: `"maybe" is not a decision`},
		{in: "", err: "is not a decision"},
		{in: "yes please", err: "is not a decision"},
	} {
		got, err := nodes.ParseToolDecision(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestAgentApproveToolsNeedsACheckpointer(t *testing.T) {
	_, err := nodes.NewAgent(nodes.AgentConfig{Model: fake.New(), ApproveTools: true})
	assert.ErrorContains(t, err, "Checkpointer")
}

// An effectful call waits for its approval, one interrupt per call, in the
// order of the calls; read-only calls do not. Approved calls run (an
// edited one with the person's arguments, which the model is told), a
// rejected one does not, and every call of the reply has its tool message
// (the model is Strict, as OpenAI is).
func TestAgentApproveToolsApproveEditReject(t *testing.T) {
	var looked atomic.Int32
	eff := &effectTool{name: "append"}
	saver := graph.NewMemorySaver()
	m := fake.New(
		fake.ToolCalls(appendCall("a"), fake.ToolCall("lookup", lookupArgs{Key: "k"}), appendCall("b"), appendCall("c")),
		fake.ToolCalls(terminate("success", "Done.")),
	).Strict()
	a := newAgent(t, m, nodes.AgentConfig{Checkpointer: saver, ApproveTools: true}, eff, lookup(t, &looked, map[string]string{"k": "v"}))
	ctx := context.Background()
	thread := graph.Thread("approve")

	res, err := a.Run(ctx, "Append lines", nil, thread)
	require.ErrorIs(t, err, graph.ErrInterrupted)
	require.NotNil(t, res.Approval)
	assert.Equal(t, "append", res.Approval.Tool)
	assert.JSONEq(t, `{"line":"a"}`, string(res.Approval.Args))
	assert.False(t, res.Approval.Unknown)
	require.NotNil(t, res.Waiting, "the approval is a question too")
	assert.Contains(t, res.Waiting.Question, `The agent wants to run append {"line":"a"}`)
	assert.Contains(t, res.Waiting.Question, `"reject: REASON"`)
	assert.Empty(t, eff.lines(), "nothing runs before it is approved")

	answers := []string{"approve", "maybe", `edit: {"line": "B"}`, "reject: not c"}
	var questions []string
	for _, ans := range answers {
		res, err = a.Resume(ctx, nil, thread, graph.Answer(ans))
		if res != nil && res.Waiting != nil {
			questions = append(questions, res.Waiting.Question)
		}
	}
	require.NoError(t, err)
	assert.Equal(t, nodes.AgentSuccess, res.Status)
	require.Len(t, questions, 3)
	assert.Contains(t, questions[0], `append {"line":"b"}`)
	assert.Contains(t, questions[1], `Your answer could not be read: "maybe" is not a decision`)
	assert.Contains(t, questions[1], `append {"line":"b"}`)
	assert.Contains(t, questions[2], `append {"line":"c"}`)

	assert.ElementsMatch(t, []string{"a", "B"}, eff.lines(), "a as asked, b edited, c rejected")
	assert.Equal(t, int32(1), looked.Load())
	calls := m.Calls()
	require.Len(t, calls, 2)
	got := toolMessages(calls[1].Messages)
	require.Len(t, got, 4, "every call of the reply has its tool message")
	assert.Contains(t, got["call_0_0"], "appended a")
	assert.Contains(t, got["call_0_2"], `changed the arguments to {"line":"B"}`)
	assert.Contains(t, got["call_0_2"], "appended B")
	assert.Contains(t, got["call_0_3"], "rejected it: not c")
	assert.Contains(t, got["call_0_1"], "v")
}

// mapJournal is a CallJournal in memory. The first keep results it is
// given are kept and the others lost (the process died before it wrote
// them); resulted is closed once it has been given wait results.
type mapJournal struct {
	mu         sync.Mutex
	recs       map[string][]byte
	keep, wait int
	results    int
	resulted   chan struct{}
	fails      error // of Record
	unreadable error // of Recall
}

func newJournal(keep, wait int) *mapJournal {
	return &mapJournal{recs: map[string][]byte{}, keep: keep, wait: wait, resulted: make(chan struct{})}
}

func (j *mapJournal) Recall(_ context.Context, key string) ([]byte, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.unreadable != nil {
		return nil, false, j.unreadable
	}
	d, ok := j.recs[key]
	return d, ok, nil
}

func (j *mapJournal) Record(_ context.Context, key string, data []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fails != nil {
		return j.fails
	}
	if strings.HasSuffix(key, ":result") {
		j.results++
		if j.results == j.wait {
			close(j.resulted)
		}
		if j.results > j.keep {
			return nil
		}
	}
	if _, ok := j.recs[key]; !ok {
		j.recs[key] = data
	}
	return nil
}

// crashDuring runs the agent's first step — one reply with calls — until
// the call of dies takes the run down with it, once j has been given its
// wait results: dies's result is never kept, as when the process is killed
// while the call runs.
func crashDuring(t *testing.T, thread string, cfg nodes.AgentConfig, j *mapJournal, dies *effectTool, calls []schemas.ToolCall, ts ...tools.Tool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dies.during = func(context.Context) {
		<-j.resulted
		cancel()
	}
	a := newAgent(t, fake.New(fake.ToolCalls(calls...)), cfg, ts...)
	_, err := a.Run(nodes.WithCallJournal(ctx, j), "Append lines", nil, graph.Thread(thread))
	require.ErrorIs(t, err, context.Canceled)
	dies.during = nil
}

// A run resumed after it died during an effectful call does not run that
// call again: the model is told its outcome is unknown. A call that had
// finished keeps its recorded result and does not run again either; a
// read-only call runs again.
func TestAgentResumeAfterACrashDoesNotRepeatSideEffects(t *testing.T) {
	var looked atomic.Int32
	done := &effectTool{name: "append"}
	dies := &effectTool{name: "deploy"}
	cfg := nodes.AgentConfig{Checkpointer: graph.NewMemorySaver()}
	ts := []tools.Tool{done, dies, lookup(t, &looked, map[string]string{"k": "v"})}
	// deploy dies once append's result is kept.
	j := newJournal(1, 1)
	crashDuring(t, "crash", cfg, j, dies,
		[]schemas.ToolCall{appendCall("a"), fake.ToolCall("lookup", lookupArgs{Key: "k"}), fake.ToolCall("deploy", map[string]string{"line": "x"})}, ts...)
	require.Equal(t, []string{"a"}, done.lines())
	require.Equal(t, []string{"x"}, dies.lines())
	before := looked.Load() // 0 or 1: lookup may not have started when the run died

	m := fake.New(fake.ToolCalls(terminate("success", "Done."))).Strict()
	a := newAgent(t, m, cfg, ts...)
	res, err := a.Resume(nodes.WithCallJournal(context.Background(), j), nil, graph.Thread("crash"))
	require.NoError(t, err)
	assert.Equal(t, nodes.AgentSuccess, res.Status)
	assert.Equal(t, []string{"a"}, done.lines(), "the finished call is not run again")
	assert.Equal(t, []string{"x"}, dies.lines(), "the call that was running when the run died is not run again")
	assert.Equal(t, before+1, looked.Load(), "a read-only call may run again")
	got := toolMessages(m.Calls()[0].Messages)
	require.Len(t, got, 3, "every call has its tool message")
	assert.Contains(t, got["call_0_0"], "appended a", "its recorded result")
	assert.NotContains(t, got["call_0_0"], "unknown")
	assert.Contains(t, got["call_0_2"], "its outcome is unknown")
	assert.Contains(t, got["call_0_2"], "it was not run again")
}

// The unknown outcome of an editor write shows the file as it is now.
func TestAgentUnknownOutcomeShowsWhatTheToolCanCheck(t *testing.T) {
	ws := t.TempDir()
	ed, err := tools.NewEditor(tools.EditorOptions{Workspace: ws})
	require.NoError(t, err)
	dies := &effectTool{name: "append"}
	cfg := nodes.AgentConfig{Checkpointer: graph.NewMemorySaver()}
	create := fake.ToolCall(tools.EditorName, map[string]string{"command": "create", "path": "notes.md", "file_text": "first line\n"})
	// The process dies once the editor has written the file, before its
	// result is kept.
	j := newJournal(0, 1)
	crashDuring(t, "editor", cfg, j, dies, []schemas.ToolCall{appendCall("x"), create}, dies, ed)
	data, err := os.ReadFile(filepath.Join(ws, "notes.md"))
	require.NoError(t, err)
	require.Equal(t, "first line\n", string(data))

	m := fake.New(fake.ToolCalls(terminate("success", "Done."))).Strict()
	a := newAgent(t, m, cfg, dies, ed)
	_, err = a.Resume(nodes.WithCallJournal(context.Background(), j), nil, graph.Thread("editor"))
	require.NoError(t, err)
	got := toolMessages(m.Calls()[0].Messages)
	assert.Contains(t, got["call_0_1"], "its outcome is unknown")
	assert.Contains(t, got["call_0_1"], `"command":"view"`)
	assert.Contains(t, got["call_0_1"], "first line", "the file as it is now")
	assert.Contains(t, got["call_0_0"], "with a read-only call", "a tool without a check says how to check")
	assert.Equal(t, []string{"x"}, dies.lines())
}

// With ApproveTools, the person decides whether a call whose outcome is
// unknown runs again.
func TestAgentUnknownOutcomeAsksThePersonWithApproveTools(t *testing.T) {
	for _, tc := range []struct {
		answer string
		lines  []string
		msg    string
	}{
		{answer: "approve", lines: []string{"x", "x"}, msg: "appended x"},
		{answer: "reject: it ran already", lines: []string{"x"}, msg: "rejected it: it ran already. The run stopped"},
	} {
		t.Run(tc.answer, func(t *testing.T) {
			dies := &effectTool{name: "append"}
			saver := graph.NewMemorySaver()
			// The first run's call is approved before it runs, then dies.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			j := newJournal(0, 0)
			dies.during = func(context.Context) { cancel() }
			cfg := nodes.AgentConfig{Checkpointer: saver, ApproveTools: true}
			a := newAgent(t, fake.New(fake.ToolCalls(appendCall("x"))), cfg, dies)
			jctx := nodes.WithCallJournal(ctx, j)
			_, err := a.Run(jctx, "Append", nil, graph.Thread("t"))
			require.ErrorIs(t, err, graph.ErrInterrupted)
			_, err = a.Resume(jctx, nil, graph.Thread("t"), graph.Answer("yes"))
			require.ErrorIs(t, err, context.Canceled)
			dies.during = nil

			m := fake.New(fake.ToolCalls(terminate("success", "Done."))).Strict()
			a = newAgent(t, m, cfg, dies)
			ctx2 := nodes.WithCallJournal(context.Background(), j)
			res, err := a.Resume(ctx2, nil, graph.Thread("t"))
			require.ErrorIs(t, err, graph.ErrInterrupted)
			require.NotNil(t, res.Approval)
			assert.True(t, res.Approval.Unknown)
			assert.Contains(t, res.Waiting.Question, "its outcome is unknown. Run it again?")
			assert.Equal(t, []string{"x"}, dies.lines(), "not run again before the person says so")

			res, err = a.Resume(ctx2, nil, graph.Thread("t"), graph.Answer(tc.answer))
			require.NoError(t, err)
			assert.Equal(t, nodes.AgentSuccess, res.Status)
			assert.Equal(t, tc.lines, dies.lines())
			got := toolMessages(m.Calls()[0].Messages)
			require.Len(t, got, 1)
			assert.Contains(t, got["call_0_0"], tc.msg)
		})
	}
}

// A call with side effects does not run when the journal cannot be
// written before it runs, or read to tell whether it ran before.
func TestAgentEffectfulCallIsNotRunUnrecorded(t *testing.T) {
	for _, tc := range []struct {
		name              string
		fails, unreadable error
		want              string
	}{
		{name: "unwritable", fails: errors.New("disk full"), want: "could not be recorded before it ran (disk full)"},
		{name: "unreadable", unreadable: errors.New("I/O error"), want: "which says whether it ran before, could not be read (I/O error)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eff := &effectTool{name: "append"}
			m := fake.New(fake.ToolCalls(appendCall("x")), fake.ToolCalls(terminate("success", "Done."))).Strict()
			a := newAgent(t, m, nodes.AgentConfig{}, eff)
			j := newJournal(0, 0)
			j.fails, j.unreadable = tc.fails, tc.unreadable
			res, err := a.Run(nodes.WithCallJournal(context.Background(), j), "Append", nil)
			require.NoError(t, err)
			assert.Equal(t, nodes.AgentSuccess, res.Status)
			assert.Empty(t, eff.lines())
			assert.Contains(t, toolMessages(m.Calls()[1].Messages)["call_0_0"], tc.want)
		})
	}
}

// staticDynamic is a dynamic tool set that does not change.
type staticDynamic struct{ c *tools.Collection }

func (s staticDynamic) Collection(context.Context) (*tools.Collection, error) { return s.c, nil }

// A run resumed by another agent (another process) still asks about the
// calls of dynamic tools (an MCP server's) with side effects.
func TestAgentApproveToolsAsksAboutDynamicToolsAfterAResume(t *testing.T) {
	own := &effectTool{name: "append"}
	remote := &effectTool{name: "srv.write"}
	rc, err := tools.NewCollection(remote)
	require.NoError(t, err)
	saver := graph.NewMemorySaver()
	newA := func(m *fake.Model) *nodes.Agent {
		return newAgent(t, m, nodes.AgentConfig{Checkpointer: saver, ApproveTools: true, Dynamic: []tools.Dynamic{staticDynamic{rc}}}, own)
	}
	ctx := context.Background()
	res, err := newA(fake.New(fake.ToolCalls(appendCall("a"), fake.ToolCall("srv.write", map[string]string{"line": "r"})))).
		Run(ctx, "Write", nil, graph.Thread("dyn"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	require.Equal(t, "append", res.Approval.Tool)

	m := fake.New(fake.ToolCalls(terminate("success", "Done."))).Strict()
	res, err = newA(m).Resume(ctx, nil, graph.Thread("dyn"), graph.Answer("approve"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	require.NotNil(t, res.Approval)
	assert.Equal(t, "srv.write", res.Approval.Tool)
	assert.Empty(t, remote.lines(), "not run before it is approved")
	res, err = newA(m).Resume(ctx, nil, graph.Thread("dyn"), graph.Answer("approve"))
	require.NoError(t, err)
	assert.Equal(t, nodes.AgentSuccess, res.Status)
	assert.Equal(t, []string{"a"}, own.lines())
	assert.Equal(t, []string{"r"}, remote.lines())
}

// A call whose arguments are not a JSON object (a provider passes
// malformed ones on as a JSON string) is asked about all the same, and
// fails as malformed once approved.
func TestAgentApproveToolsMalformedArguments(t *testing.T) {
	eff := &effectTool{name: "append"}
	m := fake.New(fake.ToolCalls(fake.ToolCall("append", json.RawMessage(`"{\"line\": oops"`))), fake.ToolCalls(terminate("success", "Done."))).Strict()
	a := newAgent(t, m, nodes.AgentConfig{Checkpointer: graph.NewMemorySaver(), ApproveTools: true}, eff)
	ctx := context.Background()
	res, err := a.Run(ctx, "Append", nil, graph.Thread("bad"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	require.NotNil(t, res.Approval)
	assert.Equal(t, `"{\"line\": oops"`, string(res.Approval.Args))
	res, err = a.Resume(ctx, nil, graph.Thread("bad"), graph.Answer("approve"))
	require.NoError(t, err)
	assert.Equal(t, nodes.AgentSuccess, res.Status)
	assert.Empty(t, eff.lines())
	assert.Contains(t, toolMessages(m.Calls()[1].Messages)["call_0_0"], "invalid arguments for append")
}
