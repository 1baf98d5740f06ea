package anthropic

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/wiretest"
	"github.com/deepgraph/deepgraph/schemas"
)

// A call marked llm.CachePrompt carries breakpoints on the last tool, the
// system prompt, the turn before the newest and the newest; one that is not
// carries none, and its system prompt stays text.
func TestCachePromptBreakpoints(t *testing.T) {
	call := schemas.ToolCall{ID: "toolu_a", Name: "lookup", Arguments: json.RawMessage(`{}`)}
	msgs := []schemas.Message{
		schemas.SystemMessage("Be careful."),
		schemas.UserMessage("Task."),
		{Role: schemas.Assistant, Content: "Looking.", ToolCalls: []schemas.ToolCall{call}},
		schemas.ToolResultMessage(call, "result"),
	}
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		wiretest.WriteJSON(w, http.StatusOK, message("end_turn", textBlock("ok")))
	})
	m := newTestModel(t, f, nil)
	tools := llm.Tools(schemas.ToolDef{Name: "lookup"}, schemas.ToolDef{Name: "other"})
	_, err := m.Generate(context.Background(), msgs, tools, llm.CachePrompt())
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), msgs, tools)
	require.NoError(t, err)
	reqs := f.Requests()
	require.Len(t, reqs, 2)

	cached := reqs[0].Body
	assert.JSONEq(t, `[{"type":"text","text":"Be careful.","cache_control":{"type":"ephemeral"}}]`, wiretest.JSON(t, cached["system"]))
	tl := cached["tools"].([]any)
	assert.NotContains(t, tl[0], "cache_control")
	assert.JSONEq(t, `{"type":"ephemeral"}`, wiretest.JSON(t, tl[1].(map[string]any)["cache_control"]))
	assert.JSONEq(t, `[
		{"role":"user","content":[{"type":"text","text":"Task."}]},
		{"role":"assistant","content":[{"type":"text","text":"Looking."},
			{"type":"tool_use","id":"toolu_a","name":"lookup","input":{},"cache_control":{"type":"ephemeral"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"result","cache_control":{"type":"ephemeral"}}]}
	]`, wiretest.JSON(t, cached["messages"]))

	plain := reqs[1].Body
	assert.Equal(t, "Be careful.", plain["system"])
	assert.NotContains(t, reqs[1].Raw, "cache_control")
}
