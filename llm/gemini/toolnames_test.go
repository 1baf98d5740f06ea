package gemini

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// Gemini accepts '.' in function names (genai.FunctionDeclaration.Name:
// letters, digits, '_', '.', ':' and '-'), so MCP's server.tool names are
// sent as they are, unlike with llm/openai and llm/anthropic.
func TestGenerateDottedToolNamesAsIs(t *testing.T) {
	const dotted = `{"candidates":[{"content":{"role":"model","parts":[` +
		`{"functionCall":{"id":"fc-1","name":"files.read_file","args":{"path":"b.txt"}}}]},"finishReason":"STOP"}]}`
	f := newFake(t, reply(http.StatusOK, dotted))
	m := f.model(t, Config{})
	read := schemas.ToolCall{ID: "fc-0", Name: "files.read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)}
	resp, err := m.Generate(context.Background(), []schemas.Message{
		schemas.UserMessage("Read a.txt, then b.txt."),
		{Role: schemas.Assistant, ToolCalls: []schemas.ToolCall{read}},
		schemas.ToolResultMessage(read, "hello"),
	}, llm.Tools(schemas.ToolDef{Name: "files.read_file"}), llm.WithToolChoice("files.read_file"))
	require.NoError(t, err)

	w := f.requests()[0].wire(t)
	assertJSON(t, `[{"functionDeclarations":[{"name":"files.read_file"}]}]`, w.Tools, "tools")
	assertJSON(t, `{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["files.read_file"]}}`, w.ToolConfig, "toolConfig")
	assertJSON(t, `[`+
		`{"role":"user","parts":[{"text":"Read a.txt, then b.txt."}]},`+
		`{"role":"model","parts":[{"functionCall":{"id":"fc-0","name":"files.read_file","args":{"path":"a.txt"}}}]},`+
		`{"role":"user","parts":[{"functionResponse":{"id":"fc-0","name":"files.read_file","response":{"output":"hello"}}}]}]`,
		w.Contents, "contents")
	require.Len(t, resp.ToolCalls, 1)
	assert.Equal(t, "files.read_file", resp.ToolCalls[0].Name)
}
