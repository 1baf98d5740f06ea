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

// MCP tools are named server.tool; Anthropic accepts no '.' in a tool name,
// so such names travel as server__tool and come back under their own names.

const dottedHistoryWire = `[
	{"role":"user","content":[{"type":"text","text":"Read a.txt."}]},
	{"role":"assistant","content":[
		{"type":"tool_use","id":"toolu_a","name":"files__read_file","input":{"path":"a.txt"}},
		{"type":"tool_use","id":"toolu_b","name":"gone__tool","input":{}}]},
	{"role":"user","content":[
		{"type":"tool_result","tool_use_id":"toolu_a","content":"hello"},
		{"type":"tool_result","tool_use_id":"toolu_b","content":"gone"}]}
]`

func toolNames(t *testing.T, body map[string]any) []string {
	t.Helper()
	var names []string
	for _, tl := range body["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	return names
}

func TestGenerateDottedToolNames(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		wiretest.WriteJSON(w, http.StatusOK, message("tool_use",
			toolUse("toolu_1", "files__read_file", `{"path":"b.txt"}`),
			toolUse("toolu_2", "web_search", `{}`),
			toolUse("toolu_3", "made__up", `{}`)))
	})
	m := newTestModel(t, f, nil)
	resp, err := m.Generate(context.Background(), wiretest.DottedHistory("toolu_"), llm.Tools(wiretest.DottedTools()...), llm.WithToolChoice("files.read_file"))
	require.NoError(t, err)

	body := f.Only(t).Body
	assert.JSONEq(t, `[
		{"name":"files__read_file","description":"Read a file.","input_schema":{"type":"object","properties":{}}},
		{"name":"web_search","input_schema":{"type":"object","properties":{}}}
	]`, wiretest.JSON(t, body["tools"]))
	assert.JSONEq(t, `{"type":"tool","name":"files__read_file"}`, wiretest.JSON(t, body["tool_choice"]))
	assert.JSONEq(t, dottedHistoryWire, wiretest.JSON(t, body["messages"]))

	assert.Equal(t, llm.FinishToolCalls, resp.FinishReason)
	assert.Equal(t, []schemas.ToolCall{
		{ID: "toolu_1", Name: "files.read_file", Arguments: json.RawMessage(`{"path":"b.txt"}`)},
		{ID: "toolu_2", Name: "web_search", Arguments: json.RawMessage(`{}`)},
		{ID: "toolu_3", Name: "made__up", Arguments: json.RawMessage(`{}`)}, // not offered: unchanged
	}, resp.ToolCalls)
}

func TestGenerateStreamDottedToolNames(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeEvents(w,
			messageStart(10),
			blockStart(0, map[string]any{"type": "tool_use", "id": "toolu_1", "name": "files__read_file", "input": map[string]any{}}),
			jsonDelta(0, `{"path":`),
			jsonDelta(0, `"c.txt"}`),
			blockStop(0),
			messageDelta("tool_use", 12),
			messageStop(),
		)
	})
	m := newTestModel(t, f, nil)
	resp, err := m.Generate(context.Background(), wiretest.DottedHistory("toolu_"), llm.Tools(wiretest.DottedTools()...),
		llm.OnDelta(func(llm.Delta) {}))
	require.NoError(t, err)

	body := f.Only(t).Body
	assert.Equal(t, []string{"files__read_file", "web_search"}, toolNames(t, body))
	assert.JSONEq(t, dottedHistoryWire, wiretest.JSON(t, body["messages"]))
	assert.Equal(t, llm.FinishToolCalls, resp.FinishReason)
	assert.Equal(t, []schemas.ToolCall{
		{ID: "toolu_1", Name: "files.read_file", Arguments: json.RawMessage(`{"path":"c.txt"}`)},
	}, resp.ToolCalls)
}

func TestGenerateSchemaToolAvoidsWireNames(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		wiretest.WriteJSON(w, http.StatusOK, message("tool_use", toolUse("toolu_1", "files__read_file_answer", `{"label":"good","score":1}`)))
	})
	m := newTestModel(t, f, nil)
	resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("Judge it.")},
		llm.Tools(schemas.ToolDef{Name: "files.read_file"}),
		llm.ResponseSchema("files__read_file", wiretest.Schema[verdict](t)))
	require.NoError(t, err)
	assert.Equal(t, []string{"files__read_file", "files__read_file_answer"}, toolNames(t, f.Only(t).Body),
		"the schema tool does not take the wire name of an offered tool")
	assert.JSONEq(t, `{"label":"good","score":1}`, resp.Content)
	assert.Empty(t, resp.ToolCalls)
}

func TestGenerateToolNameCollision(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		wiretest.WriteJSON(w, http.StatusOK, message("end_turn", textBlock("x")))
	})
	m := newTestModel(t, f, nil)
	_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("x")},
		llm.Tools(schemas.ToolDef{Name: "files__read_file"}, schemas.ToolDef{Name: "files.read_file"}))
	require.Error(t, err)
	assert.ErrorIs(t, err, llm.ErrBadRequest)
	assert.Contains(t, err.Error(), `tools "files__read_file" and "files.read_file" would both be sent as "files__read_file"`)
	assert.Contains(t, err.Error(), "anthropic: ")
	assert.Empty(t, f.Requests(), "nothing is sent")
}
