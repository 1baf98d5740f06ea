package tools

import (
	"encoding/json"

	"github.com/deepgraph/deepgraph/schemas"
)

// Effect is what a tool call may do outside the run that makes it.
//
// A call with side effects (Effectful) — running code, writing a file,
// calling a remote tool that changes something — must not be repeated
// blindly: an agent records it before it runs and when it finishes, and
// can ask a person before it runs (see nodes.AgentConfig.ApproveTools).
// Read-only calls (a search, a page read, viewing a file) may be repeated.
type Effect struct {
	// Effectful says the call may change something outside the run.
	Effectful bool
	// Check, when not nil, are the arguments of a read-only call of the
	// same tool that shows what the call changed — for the editor, a view
	// of the file — for when its outcome is unknown.
	Check json.RawMessage
}

// SideEffects is implemented by tools whose calls may have side effects.
// A tool that does not implement it is read-only: its calls may be
// repeated. bash, python_execute, the editor's writes and the MCP tools
// not annotated read-only implement it.
type SideEffects interface {
	Tool
	// Effect is what a call with args may do; args may be malformed (the
	// call will then fail without running, but say what it would do).
	Effect(args json.RawMessage) Effect
}

// Wrapper is implemented by tools that wrap another one (WithTimeout,
// telemetry's traced tools): EffectOf asks the tool inside.
type Wrapper interface {
	Unwrap() Tool
}

// EffectOf is what a call of t with args may do: the answer of t, or of
// the tool it wraps, when it implements SideEffects; a read-only call
// otherwise.
func EffectOf(t Tool, args json.RawMessage) Effect {
	for t != nil {
		if s, ok := t.(SideEffects); ok {
			return s.Effect(args)
		}
		w, ok := t.(Wrapper)
		if !ok {
			break
		}
		t = w.Unwrap()
	}
	return Effect{}
}

// Effect is what call may do (EffectOf its tool); a call of a tool the
// collection does not have runs nothing.
func (c *Collection) Effect(call schemas.ToolCall) Effect {
	t, ok := c.Get(call.Name)
	if !ok {
		return Effect{}
	}
	return EffectOf(t, call.Arguments)
}

// Unwrap returns the tool b bounds.
func (b *boundedTool) Unwrap() Tool { return b.Tool }

// Effect implements SideEffects: every call may change the workspace and
// anything the code reaches.
func (t *execTool) Effect(json.RawMessage) Effect { return Effect{Effectful: true} }

// Effect implements SideEffects: create, str_replace, insert and
// undo_edit change a file, whose view shows what they did; view does not.
// Arguments that cannot be read count as a write.
func (e *Editor) Effect(args json.RawMessage) Effect {
	var a struct {
		Command string `json:"command"`
		Path    string `json:"path"`
	}
	if json.Unmarshal(normalizeArgs(args), &a) == nil && a.Command == "view" {
		return Effect{}
	}
	if a.Path == "" {
		return Effect{Effectful: true}
	}
	check, _ := json.Marshal(map[string]string{"command": "view", "path": a.Path})
	return Effect{Effectful: true, Check: check}
}
