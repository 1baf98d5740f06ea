package tools

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/schemas"
)

func TestEffectOf(t *testing.T) {
	ws := t.TempDir()
	ed, err := NewEditor(EditorOptions{Workspace: ws})
	require.NoError(t, err)
	sh, err := NewBash(ExecOptions{AllowExec: true, Workspace: ws})
	require.NoError(t, err)
	py, err := NewPythonExecute(ExecOptions{AllowExec: true, Workspace: ws})
	require.NoError(t, err)
	plan, err := NewPlanning(PlanningOptions{})
	require.NoError(t, err)
	// The collection bounds the editor with WithTimeout: the effects are
	// asked of the tool inside.
	c, err := NewCollection(WithTimeout(ed, 0), sh, py, plan, NewTerminate())
	require.NoError(t, err)

	for _, tc := range []struct {
		name, args string
		want       Effect
	}{
		{EditorName, `{"command":"view","path":"a.md"}`, Effect{}},
		{EditorName, `{"command":"create","path":"a.md","file_text":"x"}`, Effect{Effectful: true, Check: json.RawMessage(`{"command":"view","path":"a.md"}`)}},
		{EditorName, `{"command":"str_replace","path":"d/b.md","old_str":"x","new_str":"y"}`, Effect{Effectful: true, Check: json.RawMessage(`{"command":"view","path":"d/b.md"}`)}},
		{EditorName, `{"command":"undo_edit","path":"a.md"}`, Effect{Effectful: true, Check: json.RawMessage(`{"command":"view","path":"a.md"}`)}},
		{EditorName, `not json`, Effect{Effectful: true}},
		{BashName, `{"command":"ls"}`, Effect{Effectful: true}},
		{PythonExecuteName, `{"code":"print(1)"}`, Effect{Effectful: true}},
		{PlanningName, `{}`, Effect{}},
		{TerminateName, `{}`, Effect{}},
		{"missing", `{}`, Effect{}},
	} {
		got := c.Effect(schemas.ToolCall{Name: tc.name, Arguments: json.RawMessage(tc.args)})
		assert.Equal(t, tc.want.Effectful, got.Effectful, "%s %s", tc.name, tc.args)
		if tc.want.Check == nil {
			assert.Nil(t, got.Check, "%s %s", tc.name, tc.args)
		} else {
			assert.JSONEq(t, string(tc.want.Check), string(got.Check), "%s %s", tc.name, tc.args)
		}
	}
}
