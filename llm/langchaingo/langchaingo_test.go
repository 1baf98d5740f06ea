package langchaingo_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	lcopenai "github.com/tmc/langchaingo/llms/openai"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/wiretest"
	"github.com/deepgraph/deepgraph/llm/langchaingo"
	"github.com/deepgraph/deepgraph/schemas"
)

// langchaingo's OpenAI client, adapted, against a server speaking the
// Chat Completions wire: the request carries the conversation, the tools and
// the options; the reply's tool calls, usage and finish reason come back.
func TestThroughLangchaingoOpenAIClient(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		wiretest.WriteJSON(w, http.StatusOK, map[string]any{
			"id": "c1", "object": "chat.completion", "model": "gpt-x",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{
				"role": "assistant", "content": "",
				"tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
					"function": map[string]any{"name": "web_search", "arguments": `{"query":"go"}`}}},
			}}},
			"usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15},
		})
	})
	lc, err := lcopenai.New(lcopenai.WithToken("sk-test-0123456789"), lcopenai.WithBaseURL(f.URL+"/v1"),
		lcopenai.WithModel("gpt-x"), lcopenai.WithHTTPClient(f.Client()))
	require.NoError(t, err)
	model := langchaingo.New(lc, "openai-via-langchaingo")

	params := wiretest.Schema[struct {
		Query string `json:"query"`
	}](t)
	resp, err := model.Generate(context.Background(), []schemas.Message{
		schemas.SystemMessage("Be brief."),
		schemas.UserMessage("What is new in Go?"),
	}, llm.Tools(schemas.ToolDef{Name: "web_search", Description: "Search the web.", Parameters: params}),
		llm.WithToolChoice(llm.ToolAuto), llm.Temperature(0.2), llm.MaxTokens(50))
	require.NoError(t, err)

	body := f.Only(t).Body
	assert.Equal(t, "gpt-x", body["model"])
	assert.JSONEq(t, `[{"role":"system","content":"Be brief."},{"role":"user","content":"What is new in Go?"}]`, wiretest.JSON(t, body["messages"]))
	assert.Equal(t, 0.2, body["temperature"])
	assert.Equal(t, "auto", body["tool_choice"])
	tools := body["tools"].([]any)
	require.Len(t, tools, 1)
	fn := tools[0].(map[string]any)["function"].(map[string]any)
	assert.Equal(t, "web_search", fn["name"])
	assert.JSONEq(t, wiretest.JSON(t, params), wiretest.JSON(t, fn["parameters"]))

	assert.Equal(t, llm.FinishToolCalls, resp.FinishReason)
	assert.Equal(t, []schemas.ToolCall{{ID: "call_1", Name: "web_search", Arguments: json.RawMessage(`{"query":"go"}`)}}, resp.ToolCalls)
	assert.Equal(t, llm.Usage{PromptTokens: 11, CompletionTokens: 4, TotalTokens: 15}, resp.Usage)
}

func TestThroughLangchaingoOpenAIClientStreaming(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, line := range []string{
			`{"id":"s","object":"chat.completion.chunk","model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`,
			`{"id":"s","object":"chat.completion.chunk","model":"gpt-x","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`,
		} {
			_, _ = w.Write([]byte("data: " + line + "\n\n"))
		}
		_, _ = w.Write([]byte("data: [DONE]\n\n"))
	})
	lc, err := lcopenai.New(lcopenai.WithToken("sk-test-0123456789"), lcopenai.WithBaseURL(f.URL+"/v1"),
		lcopenai.WithModel("gpt-x"), lcopenai.WithHTTPClient(f.Client()))
	require.NoError(t, err)
	var got strings.Builder
	resp, err := langchaingo.New(lc, "").Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")},
		llm.OnDelta(func(d llm.Delta) { got.WriteString(d.Content) }))
	require.NoError(t, err)
	assert.Equal(t, true, f.Only(t).Body["stream"])
	assert.Equal(t, "Hello", got.String())
	assert.Equal(t, "Hello", resp.Content)
}

func TestGenerateRefusesBeforeCalling(t *testing.T) {
	m := langchaingo.New(nil, "")
	_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("x")})
	assert.ErrorIs(t, err, llm.ErrNoModel)

	lc, err := lcopenai.New(lcopenai.WithToken("k"), lcopenai.WithBaseURL("http://127.0.0.1:1/v1"))
	require.NoError(t, err)
	m = langchaingo.New(lc, "")
	for _, opts := range [][]llm.Option{
		{llm.GoogleSearch()},
		{llm.WithToolChoice(llm.ToolRequired)},
		{llm.Tools(schemas.ToolDef{Name: "a"}), llm.WithToolChoice("b")},
	} {
		_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("x")}, opts...)
		assert.True(t, errors.Is(err, llm.ErrUnsupported) || errors.Is(err, llm.ErrBadRequest), "%v", err)
	}
}

type echoTool struct{ fail bool }

func (echoTool) Name() string        { return "echo" }
func (echoTool) Description() string { return "Echoes its input." }
func (e echoTool) Call(_ context.Context, input string) (string, error) {
	if e.fail {
		return "", errors.New("echo is broken")
	}
	return "echo: " + input, nil
}

func TestTool(t *testing.T) {
	tool, err := langchaingo.Tool(echoTool{})
	require.NoError(t, err)
	assert.Equal(t, "echo", tool.Name())
	assert.Equal(t, []string{"input"}, tool.Parameters().Required)

	res, err := tool.Run(context.Background(), json.RawMessage(`{"input":"hi"}`))
	require.NoError(t, err)
	assert.Equal(t, "echo: hi", res.Output)
	assert.Empty(t, res.Error)

	res, err = tool.Run(context.Background(), json.RawMessage(`{"text":"hi"}`))
	require.NoError(t, err)
	assert.Contains(t, res.Error, `no "input"`, "bad arguments are the model's to fix")

	broken, err := langchaingo.Tool(echoTool{fail: true})
	require.NoError(t, err)
	res, err = broken.Run(context.Background(), json.RawMessage(`{"input":"hi"}`))
	require.NoError(t, err)
	assert.Equal(t, "echo is broken", res.Error)
}
