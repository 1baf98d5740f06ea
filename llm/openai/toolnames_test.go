package openai

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

// MCP tools are named server.tool; OpenAI accepts no '.' in a tool name, so
// such names travel as server__tool and come back under their own names.

const dottedHistoryWire = `[
	{"role":"user","content":"Read a.txt."},
	{"role":"assistant","content":"","tool_calls":[
		{"id":"call_a","type":"function","function":{"name":"files__read_file","arguments":"{\"path\":\"a.txt\"}"}},
		{"id":"call_b","type":"function","function":{"name":"gone__tool","arguments":"{}"}}]},
	{"role":"tool","content":"hello","tool_call_id":"call_a"},
	{"role":"tool","content":"gone","tool_call_id":"call_b"}
]`

func TestGenerateDottedToolNames(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		reply := completion("", map[string]any{
			"content": nil,
			"tool_calls": []any{
				map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "files__read_file", "arguments": `{"path":"b.txt"}`}},
				map[string]any{"id": "call_2", "type": "function", "function": map[string]any{"name": "web_search", "arguments": `{}`}},
				map[string]any{"id": "call_3", "type": "function", "function": map[string]any{"name": "made__up", "arguments": `{}`}},
			},
		})
		wiretest.WriteJSON(w, http.StatusOK, reply)
	})
	m := newTestModel(t, f, nil)
	resp, err := m.Generate(context.Background(), wiretest.DottedHistory("call_"), llm.Tools(wiretest.DottedTools()...), llm.WithToolChoice("files.read_file"))
	require.NoError(t, err)

	body := f.Only(t).Body
	assert.JSONEq(t, `[
		{"type":"function","function":{"name":"files__read_file","description":"Read a file.","parameters":{"type":"object","properties":{}}}},
		{"type":"function","function":{"name":"web_search","parameters":{"type":"object","properties":{}}}}
	]`, wiretest.JSON(t, body["tools"]))
	assert.JSONEq(t, `{"type":"function","function":{"name":"files__read_file"}}`, wiretest.JSON(t, body["tool_choice"]))
	assert.JSONEq(t, dottedHistoryWire, wiretest.JSON(t, body["messages"]))

	assert.Equal(t, []schemas.ToolCall{
		{ID: "call_1", Name: "files.read_file", Arguments: json.RawMessage(`{"path":"b.txt"}`)},
		{ID: "call_2", Name: "web_search", Arguments: json.RawMessage(`{}`)},
		{ID: "call_3", Name: "made__up", Arguments: json.RawMessage(`{}`)}, // not offered: unchanged
	}, resp.ToolCalls)
}

func TestGenerateStreamDottedToolNames(t *testing.T) {
	call := func(i int, fn map[string]any, extra map[string]any) map[string]any {
		tc := map[string]any{"index": i, "function": fn}
		for k, v := range extra {
			tc[k] = v
		}
		return map[string]any{"tool_calls": []any{tc}}
	}
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeSSE(w,
			delta(map[string]any{"role": "assistant"}, nil),
			delta(call(0, map[string]any{"name": "files__read_file", "arguments": ""}, map[string]any{"id": "call_x", "type": "function"}), nil),
			delta(call(0, map[string]any{"arguments": `{"path":`}, nil), nil),
			delta(call(0, map[string]any{"arguments": `"c.txt"}`}, nil), nil),
			delta(map[string]any{}, "tool_calls"),
			"data: [DONE]\n\n",
		)
	})
	m := newTestModel(t, f, nil)
	resp, err := m.Generate(context.Background(), wiretest.DottedHistory("call_"), llm.Tools(wiretest.DottedTools()...),
		llm.OnDelta(func(llm.Delta) {}))
	require.NoError(t, err)

	body := f.Only(t).Body
	assert.Equal(t, "files__read_file", body["tools"].([]any)[0].(map[string]any)["function"].(map[string]any)["name"])
	assert.JSONEq(t, dottedHistoryWire, wiretest.JSON(t, body["messages"]))
	assert.Equal(t, llm.FinishToolCalls, resp.FinishReason)
	assert.Equal(t, []schemas.ToolCall{
		{ID: "call_x", Name: "files.read_file", Arguments: json.RawMessage(`{"path":"c.txt"}`)},
	}, resp.ToolCalls)
}

func TestGenerateToolNameCollision(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		wiretest.WriteJSON(w, http.StatusOK, completion("x", nil))
	})
	m := newTestModel(t, f, nil)
	_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("x")},
		llm.Tools(schemas.ToolDef{Name: "files.read_file"}, schemas.ToolDef{Name: "files__read_file"}))
	require.Error(t, err)
	assert.ErrorIs(t, err, llm.ErrBadRequest)
	assert.Contains(t, err.Error(), `tools "files.read_file" and "files__read_file" would both be sent as "files__read_file"`)
	assert.Contains(t, err.Error(), "openai: ")
	assert.Empty(t, f.Requests(), "nothing is sent")
}
