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

// A Transient message — shown for one call only — is never the end of a
// cached prefix: the breakpoints go on the last block before it, in its
// turn and in the turn before.
func TestCachePromptBreakpointsSkipTransientMessages(t *testing.T) {
	call := schemas.ToolCall{ID: "toolu_a", Name: "lookup", Arguments: json.RawMessage(`{}`)}
	state := schemas.Message{Role: schemas.User, Content: "The page now.", Transient: true}
	for _, c := range []struct {
		name string
		msgs []schemas.Message
		want string
	}{
		{"an agent step with a state after the results", []schemas.Message{
			schemas.UserMessage("Task."),
			{Role: schemas.Assistant, Content: "Looking.", ToolCalls: []schemas.ToolCall{call}},
			schemas.ToolResultMessage(call, "result"),
			state,
		}, `[
			{"role":"user","content":[{"type":"text","text":"Task."}]},
			{"role":"assistant","content":[{"type":"text","text":"Looking."},
				{"type":"tool_use","id":"toolu_a","name":"lookup","input":{},"cache_control":{"type":"ephemeral"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"result","cache_control":{"type":"ephemeral"}},
				{"type":"text","text":"The page now."}]}
		]`},
		{"one turn of blocks, its last one transient", []schemas.Message{
			schemas.UserMessage("Question."),
			schemas.UserMessage("Finding 1."),
			schemas.UserMessage("Finding 2."),
			{Role: schemas.User, Content: "What to do now.", Transient: true},
		}, `[
			{"role":"user","content":[{"type":"text","text":"Question."},{"type":"text","text":"Finding 1."},
				{"type":"text","text":"Finding 2.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"What to do now."}]}
		]`},
		{"a newest turn that is all transient", []schemas.Message{
			schemas.UserMessage("Task."),
			schemas.AssistantMessage("Done?"),
			state,
		}, `[
			{"role":"user","content":[{"type":"text","text":"Task.","cache_control":{"type":"ephemeral"}}]},
			{"role":"assistant","content":[{"type":"text","text":"Done?","cache_control":{"type":"ephemeral"}}]},
			{"role":"user","content":[{"type":"text","text":"The page now."}]}
		]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				wiretest.WriteJSON(w, http.StatusOK, message("end_turn", textBlock("ok")))
			})
			_, err := newTestModel(t, f, nil).Generate(context.Background(), c.msgs, llm.CachePrompt())
			require.NoError(t, err)
			assert.JSONEq(t, c.want, wiretest.JSON(t, f.Requests()[0].Body["messages"]))
		})
	}
}
