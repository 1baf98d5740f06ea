package nodes_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/tools"
)

type writeArgs struct {
	Path string `json:"path" jsonschema:"The file's path in the workspace."`
	Text string `json:"text" jsonschema:"Its content."`
}

// writer is a tool that writes a file in ws.
func writer(ws string) tools.Tool {
	return tools.MustFunc("write", "Writes a file.", func(_ context.Context, a writeArgs) (tools.Result, error) {
		if err := os.WriteFile(filepath.Join(ws, a.Path), []byte(a.Text), 0o600); err != nil {
			return tools.Failf("%v", err), nil
		}
		return tools.Text("written"), nil
	})
}

// verifyTurns are the verification messages the model was shown.
func verifyTurns(m *fake.Model) []string {
	var out []string
	for _, c := range m.Calls() {
		if last := c.LastMessage(); strings.HasPrefix(last.Content, "Before this is marked done") {
			out = append(out, last.Content)
		}
	}
	return out
}

func TestAgentDoneMeansDone(t *testing.T) {
	t.Run("a text reply to write notes.md gets a verification turn, then the file is written", func(t *testing.T) {
		ws := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(ws, "old.txt"), []byte("0123456789"), 0o600))
		m := fake.New(
			fake.Text("Here are the notes: Go 1.22 changed loop variables."),
			fake.ToolCalls(fake.ToolCall("write", writeArgs{Path: "notes.md", Text: "# Notes\nGo 1.22 changed loop variables.\n"})),
			fake.ToolCalls(terminate("success", "The notes are in notes.md.")),
		).Strict()
		var events []nodes.AgentEventKind
		a := newAgent(t, m, nodes.AgentConfig{Workspace: ws}, writer(ws))
		res, err := a.Run(context.Background(), "Find what changed in Go 1.22 and write notes.md", func(e nodes.AgentEvent) { events = append(events, e.Kind) })
		require.NoError(t, err)
		assert.Equal(t, nodes.AgentSuccess, res.Status)
		assert.Empty(t, res.Missing)
		turns := verifyTurns(m)
		require.Len(t, turns, 1, "one turn: the file was there when the model said done again")
		assert.Contains(t, turns[0], "Expected: notes.md.")
		assert.Contains(t, turns[0], "- old.txt (10)", "the listing has names and sizes")
		assert.Contains(t, turns[0], "Missing or empty: notes.md")
		assert.Contains(t, events, nodes.AgentEventVerify)
	})
	t.Run("a model that keeps saying done without the file ends missing_files", func(t *testing.T) {
		ws := t.TempDir()
		m := fake.New(fake.Text("Done. I saved the notes.").Repeat())
		a := newAgent(t, m, nodes.AgentConfig{Workspace: ws}, writer(ws))
		res, err := a.Run(context.Background(), "write notes.md", nil)
		require.NoError(t, err)
		assert.Equal(t, nodes.AgentMissingFiles, res.Status)
		assert.False(t, res.Status.OK())
		assert.True(t, res.Incomplete)
		assert.Equal(t, []string{"notes.md"}, res.Missing)
		assert.Len(t, m.Calls(), 1+nodes.DefaultVerifyTurns, "bounded: one call and its verification turns")
		turns := verifyTurns(m)
		require.Len(t, turns, nodes.DefaultVerifyTurns)
		assert.Contains(t, turns[0], "The workspace is empty.")
	})
	t.Run("a file the answer says it wrote is checked too", func(t *testing.T) {
		ws := t.TempDir()
		m := fake.New(fake.ToolCalls(terminate("success", "I wrote the table to table.csv.")).Repeat())
		a := newAgent(t, m, nodes.AgentConfig{Workspace: ws, VerifyTurns: 1}, writer(ws))
		res, err := a.Run(context.Background(), "Tabulate the Go releases", nil)
		require.NoError(t, err)
		assert.Equal(t, nodes.AgentMissingFiles, res.Status)
		assert.Equal(t, []string{"table.csv"}, res.Missing)
		assert.Len(t, m.Calls(), 2)
	})
	t.Run("an unnamed file gets one turn and the confirmation is taken", func(t *testing.T) {
		ws := t.TempDir()
		m := fake.New(
			fake.ToolCalls(fake.ToolCall("write", writeArgs{Path: "primes.txt", Text: "2 3 5 7"})),
			fake.Text("Written.").Repeat(),
		)
		a := newAgent(t, m, nodes.AgentConfig{Workspace: ws}, writer(ws))
		res, err := a.Run(context.Background(), "Create a file with the first four primes", nil)
		require.NoError(t, err)
		assert.Equal(t, nodes.AgentAnswered, res.Status)
		turns := verifyTurns(m)
		require.Len(t, turns, 1)
		assert.Contains(t, turns[0], "- primes.txt (7)")
	})
	t.Run("a task that asks for text, no workspace, or the check turned off: no turn", func(t *testing.T) {
		for name, c := range map[string]struct {
			cfg  nodes.AgentConfig
			task string
		}{
			"text":         {nodes.AgentConfig{Workspace: t.TempDir()}, "What is Go?"},
			"no workspace": {nodes.AgentConfig{}, "write notes.md"},
			"off":          {nodes.AgentConfig{Workspace: t.TempDir(), VerifyTurns: -1}, "write notes.md"},
		} {
			m := fake.New(fake.Text("Go is a language."))
			a := newAgent(t, m, c.cfg)
			res, err := a.Run(context.Background(), c.task, nil)
			require.NoError(t, err, name)
			assert.Equal(t, nodes.AgentAnswered, res.Status, name)
			assert.Len(t, m.Calls(), 1, name)
		}
	})
}

func TestFlowStepThatAsksForAFileIsNotCompletedByText(t *testing.T) {
	ws := t.TempDir()
	planner := fake.New(planCall("create", "Notes", "Find what changed in Go 1.22", "Write notes.md"), fake.Text("summary"))
	model := fake.New(
		fake.Text("Loop variables are per iteration now."),                          // step 0: text is its result
		fake.Text("Here are the notes: loop variables are per iteration.").Repeat(), // step 1: never writes
	)
	col, err := tools.NewCollection(writer(ws))
	require.NoError(t, err)
	agent, err := nodes.NewAgent(nodes.AgentConfig{Model: model, Tools: col, Workspace: ws})
	require.NoError(t, err)
	f, err := nodes.NewFlow(nodes.FlowConfig{Planner: planner, MaxRevisions: -1,
		Executors: []nodes.FlowExecutor{{Name: "agent", Executor: nodes.AgentExecutor(agent)}}})
	require.NoError(t, err)

	res, err := f.Run(context.Background(), "Find what changed in Go 1.22 and write notes.md", nil)
	require.NoError(t, err)
	assert.NotEqual(t, nodes.FlowCompleted, res.Status, "never completed with the file missing")
	assert.Equal(t, nodes.FlowPartial, res.Status)
	assert.Equal(t, []tools.StepStatus{"completed", "blocked"}, statuses(res.Plan), "only the step that asks for the file is checked")
	assert.Contains(t, res.Steps[1].Reason, "notes.md, missing or empty in the workspace")
	assert.Len(t, verifyTurns(model), nodes.DefaultVerifyTurns)
}
