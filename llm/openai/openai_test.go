package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/sdkwire"
	"github.com/deepgraph/deepgraph/llm/internal/wiretest"
	"github.com/deepgraph/deepgraph/schemas"
)

func TestGeneratePlain(t *testing.T) {
	tests := []struct {
		name       string
		opts       []llm.Option
		field      TokenField
		wantFields map[string]any // expected body members
		absent     []string       // body members that must be missing
	}{
		{
			name:   "defaults leave temperature and token cap to the server",
			absent: []string{"temperature", "max_tokens", "max_completion_tokens", "stream", "response_format", "tools", "tool_choice"},
		},
		{
			name:       "options, compatible server gets max_tokens",
			opts:       []llm.Option{llm.Temperature(0.3), llm.MaxTokens(99), llm.Stop("END")},
			wantFields: map[string]any{"temperature": 0.3, "max_tokens": 99.0, "stop": []any{"END"}},
			absent:     []string{"max_completion_tokens"},
		},
		{
			name:       "max_completion_tokens when configured",
			opts:       []llm.Option{llm.MaxTokens(50), llm.Temperature(0)},
			field:      TokenFieldMaxCompletionTokens,
			wantFields: map[string]any{"max_completion_tokens": 50.0, "temperature": 0.0},
			absent:     []string{"max_tokens"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				wiretest.WriteJSON(w, http.StatusOK, completion("Paris.", nil))
			})
			m := newTestModel(t, f, func(c *Config) { c.TokenField = tt.field })
			resp, err := m.Generate(context.Background(), []schemas.Message{
				schemas.SystemMessage("Be brief."),
				schemas.UserMessage("Capital of France?"),
			}, tt.opts...)
			require.NoError(t, err)

			req := f.Only(t)
			assert.Equal(t, http.MethodPost, req.Method)
			assert.Equal(t, "/v1/chat/completions", req.Path)
			assert.Equal(t, "Bearer "+testKey, req.Header.Get("Authorization"))
			assert.Equal(t, DefaultModel, req.Body["model"])
			assert.JSONEq(t, `[{"role":"system","content":"Be brief."},{"role":"user","content":"Capital of France?"}]`, wiretest.JSON(t, req.Body["messages"]))
			for k, v := range tt.wantFields {
				assert.Equal(t, v, req.Body[k], k)
			}
			for _, k := range tt.absent {
				assert.NotContains(t, req.Body, k)
			}

			assert.Equal(t, "Paris.", resp.Content)
			assert.Equal(t, llm.FinishStop, resp.FinishReason)
			assert.Equal(t, "gpt-4.1-mini-2025-04-14", resp.Model)
			assert.Equal(t, llm.Usage{PromptTokens: 12, CompletionTokens: 5, TotalTokens: 17, CachedTokens: 4, ReasoningTokens: 2}, resp.Usage)
			assert.Empty(t, resp.ToolCalls)
		})
	}
}

type answer struct {
	Title string   `json:"title" jsonschema:"a short title"`
	Score float64  `json:"score"`
	Tags  []string `json:"tags"`
}

type answerWithOptional struct {
	Title string `json:"title"`
	Note  string `json:"note,omitempty"`
}

func TestGenerateJSONSchemaSendsTheFullSchema(t *testing.T) {
	rich := wiretest.Schema[answer](t)
	minScore, maxScore := 0.0, 1.0
	rich.Properties["score"].Minimum = &minScore
	rich.Properties["score"].Maximum = &maxScore
	rich.Properties["title"].AnyOf = []*jsonschema.Schema{{Type: "string", Pattern: "^[A-Z]"}, {Type: "string", Format: "uri"}}

	tests := []struct {
		name       string
		schemaName string
		schema     *jsonschema.Schema
		wantName   string
		wantStrict bool
	}{
		{"strict-compatible struct with anyOf and min/max", "answer", rich, "answer", true},
		{"optional field means not strict", "with optional", wiretest.Schema[answerWithOptional](t), "with_optional", false},
		{"no name", "", wiretest.Schema[schemas.Reflection](t), "response", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				wiretest.WriteJSON(w, http.StatusOK, completion(`{"title":"T","score":0.5,"tags":[]}`, nil))
			})
			m := newTestModel(t, f, nil)
			resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("Rate it.")},
				llm.ResponseSchema(tt.schemaName, tt.schema))
			require.NoError(t, err)
			assert.Equal(t, `{"title":"T","score":0.5,"tags":[]}`, resp.Content)

			body := f.Only(t).Body
			format, ok := body["response_format"].(map[string]any)
			require.True(t, ok, "response_format missing: %v", body)
			assert.Equal(t, "json_schema", format["type"])
			js := format["json_schema"].(map[string]any)
			assert.Equal(t, tt.wantName, js["name"])
			assert.Equal(t, tt.wantStrict, js["strict"])
			assert.JSONEq(t, wiretest.JSON(t, tt.schema), wiretest.JSON(t, js["schema"]), "the schema must arrive complete")
			// No instructions are added in native mode.
			assert.JSONEq(t, `[{"role":"user","content":"Rate it."}]`, wiretest.JSON(t, body["messages"]))
		})
	}
}

func TestGenerateSchemaFallbacks(t *testing.T) {
	schema := wiretest.Schema[schemas.SearchQueryList](t)
	tests := []struct {
		name       string
		mode       SchemaMode
		msgs       []schemas.Message
		wantFormat string // JSON of response_format, "" for none
		wantSystem int    // index of the message carrying the instructions
		wantPrefix string // that message starts with this
	}{
		{"json_object with a system prompt", SchemaJSONObject,
			[]schemas.Message{schemas.SystemMessage("You plan searches."), schemas.UserMessage("q")},
			`{"type":"json_object"}`, 0, "You plan searches.\n\nReply with one JSON object (queries)"},
		{"prompt only without a system prompt", SchemaPrompt,
			[]schemas.Message{schemas.UserMessage("q")},
			"", 0, "Reply with one JSON object (queries)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				wiretest.WriteJSON(w, http.StatusOK, completion(`{"query":["a"],"rationale":"r"}`, nil))
			})
			m := newTestModel(t, f, func(c *Config) { c.SchemaMode = tt.mode })
			_, err := m.Generate(context.Background(), tt.msgs, llm.ResponseSchema("queries", schema))
			require.NoError(t, err)
			body := f.Only(t).Body
			if tt.wantFormat == "" {
				assert.NotContains(t, body, "response_format")
			} else {
				assert.JSONEq(t, tt.wantFormat, wiretest.JSON(t, body["response_format"]))
			}
			msgs := body["messages"].([]any)
			require.Len(t, msgs, 2)
			sys := msgs[tt.wantSystem].(map[string]any)
			assert.Equal(t, "system", sys["role"])
			content := sys["content"].(string)
			assert.True(t, strings.HasPrefix(content, tt.wantPrefix), content)
			assert.Contains(t, content, `"rationale"`, "the schema itself is in the prompt")
		})
	}
}

func TestGenerateTools(t *testing.T) {
	searchParams := wiretest.Schema[struct {
		Query string `json:"query"`
	}](t)
	tools := []schemas.ToolDef{
		{Name: "web_search", Description: "Search the web.", Parameters: searchParams},
		{Name: "now", Description: "Current time."},
	}
	first := schemas.ToolCall{ID: "call_a", Name: "web_search", Arguments: json.RawMessage(`{"query":"go 1.26"}`)}
	second := schemas.ToolCall{ID: "call_b", Name: "now"}
	history := []schemas.Message{
		schemas.UserMessage("What is new?"),
		{Role: schemas.Assistant, ToolCalls: []schemas.ToolCall{first, second}},
		schemas.ToolResultMessage(first, "results…"),
		schemas.ToolResultMessage(second, "2026-11-05"),
	}

	choices := []struct {
		choice llm.ToolChoice
		want   string // JSON of tool_choice, "" for absent
	}{
		{"", ""},
		{llm.ToolAuto, `"auto"`},
		{llm.ToolNone, `"none"`},
		{llm.ToolRequired, `"required"`},
		{"web_search", `{"type":"function","function":{"name":"web_search"}}`},
	}
	for _, c := range choices {
		t.Run("choice="+string(c.choice), func(t *testing.T) {
			f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				reply := completion("", map[string]any{
					"content": nil,
					"tool_calls": []any{
						map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "web_search", "arguments": `{"query":"a"}`}},
						map[string]any{"id": "call_2", "type": "function", "function": map[string]any{"name": "web_search", "arguments": `{"query":"b"}`}},
					},
				})
				reply["choices"].([]any)[0].(map[string]any)["finish_reason"] = "tool_calls"
				wiretest.WriteJSON(w, http.StatusOK, reply)
			})
			m := newTestModel(t, f, nil)
			resp, err := m.Generate(context.Background(), history, llm.Tools(tools...), llm.WithToolChoice(c.choice))
			require.NoError(t, err)

			body := f.Only(t).Body
			assert.JSONEq(t, `[
				{"type":"function","function":{"name":"web_search","description":"Search the web.",
				  "parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"],"additionalProperties":false}}},
				{"type":"function","function":{"name":"now","description":"Current time.","parameters":{"type":"object","properties":{}}}}
			]`, wiretest.JSON(t, body["tools"]))
			if c.want == "" {
				assert.NotContains(t, body, "tool_choice")
			} else {
				assert.JSONEq(t, c.want, wiretest.JSON(t, body["tool_choice"]))
			}
			assert.JSONEq(t, `[
				{"role":"user","content":"What is new?"},
				{"role":"assistant","content":"","tool_calls":[
					{"id":"call_a","type":"function","function":{"name":"web_search","arguments":"{\"query\":\"go 1.26\"}"}},
					{"id":"call_b","type":"function","function":{"name":"now","arguments":"{}"}}]},
				{"role":"tool","content":"results…","tool_call_id":"call_a"},
				{"role":"tool","content":"2026-11-05","tool_call_id":"call_b"}
			]`, wiretest.JSON(t, body["messages"]))

			assert.Equal(t, llm.FinishToolCalls, resp.FinishReason)
			assert.Equal(t, []schemas.ToolCall{
				{ID: "call_1", Name: "web_search", Arguments: json.RawMessage(`{"query":"a"}`)},
				{ID: "call_2", Name: "web_search", Arguments: json.RawMessage(`{"query":"b"}`)},
			}, resp.ToolCalls)
		})
	}
}

func TestGenerateRejectsBadToolRequestsBeforeSending(t *testing.T) {
	tests := []struct {
		name string
		msgs []schemas.Message
		opts []llm.Option
	}{
		{"choice names an unknown tool", []schemas.Message{schemas.UserMessage("x")},
			[]llm.Option{llm.Tools(schemas.ToolDef{Name: "a"}), llm.WithToolChoice("b")}},
		{"required without tools", []schemas.Message{schemas.UserMessage("x")},
			[]llm.Option{llm.WithToolChoice(llm.ToolRequired)}},
		{"duplicate tool names", []schemas.Message{schemas.UserMessage("x")},
			[]llm.Option{llm.Tools(schemas.ToolDef{Name: "a"}, schemas.ToolDef{Name: "a"})}},
		{"tool result without a call ID", []schemas.Message{{Role: schemas.Tool, Content: "r"}}, nil},
		{"unknown role", []schemas.Message{{Role: "narrator", Content: "r"}}, nil},
		{"no messages", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				wiretest.WriteJSON(w, http.StatusOK, completion("x", nil))
			})
			m := newTestModel(t, f, nil)
			_, err := m.Generate(context.Background(), tt.msgs, tt.opts...)
			require.Error(t, err)
			assert.ErrorIs(t, err, llm.ErrBadRequest)
			assert.Empty(t, f.Requests())
		})
	}
}

func TestGenerateImages(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		wiretest.WriteJSON(w, http.StatusOK, completion("a cat", nil))
	})
	m := newTestModel(t, f, nil)
	call := schemas.ToolCall{ID: "call_s", Name: "screenshot"}
	shot := schemas.ToolResultMessage(call, "taken")
	shot.Images = []schemas.Image{{MIMEType: "image/png", Data: []byte{1, 2}}}
	_, err := m.Generate(context.Background(), []schemas.Message{
		{Role: schemas.User, Content: "What is this?", Images: []schemas.Image{{MIMEType: "image/jpeg", Data: []byte("jpg")}}},
		{Role: schemas.Assistant, ToolCalls: []schemas.ToolCall{call}},
		shot,
	})
	require.NoError(t, err)
	assert.JSONEq(t, `[
		{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,anBn"}}]},
		{"role":"assistant","content":"","tool_calls":[{"id":"call_s","type":"function","function":{"name":"screenshot","arguments":"{}"}}]},
		{"role":"tool","content":"taken","tool_call_id":"call_s"},
		{"role":"user","content":[{"type":"text","text":"Images returned by the tool calls above:"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AQI="}}]}
	]`, wiretest.JSON(t, f.Only(t).Body["messages"]))
}

func TestGenerateReadsNonStandardFields(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		reply := completion("42", map[string]any{
			"reasoning": "thought about it",
			"tool_calls": []any{
				map[string]any{"type": "function", "function": map[string]any{"name": "calc", "arguments": `{"x": 1`}},
			},
		})
		wiretest.WriteJSON(w, http.StatusOK, reply)
	})
	m := newTestModel(t, f, nil)
	resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("?")})
	require.NoError(t, err)
	assert.Equal(t, "thought about it", resp.Reasoning, `the "reasoning" field (Ollama, vLLM, OpenRouter)`)
	require.Len(t, resp.ToolCalls, 1)
	assert.True(t, strings.HasPrefix(resp.ToolCalls[0].ID, "call_"), "an ID is generated")
	assert.JSONEq(t, `"{\"x\": 1"`, string(resp.ToolCalls[0].Arguments), "malformed arguments are kept as a JSON string")
	assert.Equal(t, llm.FinishToolCalls, resp.FinishReason, "stop with tool calls means tool_calls")
	_, err = json.Marshal(resp)
	assert.NoError(t, err, "the response must serialise")
}

func TestGenerateStream(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeSSE(w,
			": keep-alive comment\n\n",
			delta(map[string]any{"role": "assistant", "content": ""}, nil),
			delta(map[string]any{"reasoning_content": "Let me think. "}, nil),
			delta(map[string]any{"content": "Hel"}, nil),
			delta(map[string]any{"content": "lo"}, nil),
			delta(map[string]any{}, "stop"),
			usageChunk(9, 3),
			"data: [DONE]\n\n",
		)
	})
	m := newTestModel(t, f, nil)
	var deltas []llm.Delta
	resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")},
		llm.OnDelta(func(d llm.Delta) { deltas = append(deltas, d) }))
	require.NoError(t, err)

	body := f.Only(t).Body
	assert.Equal(t, true, body["stream"])
	assert.JSONEq(t, `{"include_usage":true}`, wiretest.JSON(t, body["stream_options"]))

	assert.Equal(t, []llm.Delta{{Reasoning: "Let me think. "}, {Content: "Hel"}, {Content: "lo"}}, deltas)
	assert.Equal(t, "Hello", resp.Content)
	assert.Equal(t, "Let me think. ", resp.Reasoning)
	assert.Equal(t, llm.FinishStop, resp.FinishReason)
	assert.Equal(t, "gpt-4.1-mini-2025-04-14", resp.Model)
	assert.Equal(t, llm.Usage{PromptTokens: 9, CompletionTokens: 3, TotalTokens: 12}, resp.Usage)
}

func TestGenerateStreamToolCalls(t *testing.T) {
	idx := func(i int) map[string]any { return map[string]any{"index": i} }
	call := func(i int, extra map[string]any) map[string]any {
		m := idx(i)
		for k, v := range extra {
			m[k] = v
		}
		return map[string]any{"tool_calls": []any{m}}
	}
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeSSE(w,
			delta(map[string]any{"role": "assistant", "reasoning": "need two lookups"}, nil),
			delta(call(0, map[string]any{"id": "call_x", "type": "function", "function": map[string]any{"name": "lookup", "arguments": ""}}), nil),
			delta(call(1, map[string]any{"id": "call_y", "type": "function", "function": map[string]any{"name": "lookup", "arguments": `{"k":`}}), nil),
			// Fragments of the two calls interleave; some servers repeat "type".
			delta(call(0, map[string]any{"type": "function", "function": map[string]any{"arguments": `{"k":`}}), nil),
			delta(call(0, map[string]any{"function": map[string]any{"arguments": `"a"}`}}), nil),
			delta(call(1, map[string]any{"function": map[string]any{"arguments": `"b"}`}}), nil),
			delta(map[string]any{}, "tool_calls"),
			"data: [DONE]\n\n",
		)
	})
	m := newTestModel(t, f, func(c *Config) { c.NoStreamUsage = true })
	var deltas []llm.Delta
	resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("look up a and b")},
		llm.Tools(schemas.ToolDef{Name: "lookup"}),
		llm.OnDelta(func(d llm.Delta) { deltas = append(deltas, d) }))
	require.NoError(t, err)

	assert.NotContains(t, f.Only(t).Body, "stream_options")
	assert.Equal(t, []llm.Delta{{Reasoning: "need two lookups"}}, deltas, "tool-call JSON is not content")
	assert.Empty(t, resp.Content)
	assert.Equal(t, "need two lookups", resp.Reasoning)
	assert.Equal(t, llm.FinishToolCalls, resp.FinishReason)
	assert.Equal(t, []schemas.ToolCall{
		{ID: "call_x", Name: "lookup", Arguments: json.RawMessage(`{"k":"a"}`)},
		{ID: "call_y", Name: "lookup", Arguments: json.RawMessage(`{"k":"b"}`)},
	}, resp.ToolCalls)
}

func TestGenerateStreamFailures(t *testing.T) {
	tests := []struct {
		name       string
		events     []any
		wantIs     error
		wantStatus int
		wantMsg    string
	}{
		{"ends without [DONE] or finish_reason",
			[]any{delta(map[string]any{"content": "Hal"}, nil)},
			llm.ErrUnavailable, 0, "incomplete"},
		{"cut inside a line",
			[]any{delta(map[string]any{"content": "Hal"}, nil), `data: {"choices":[{"index":0,"delta":{"content":"f`},
			llm.ErrUnavailable, 0, "incomplete"},
		{"error object mid-stream",
			[]any{delta(map[string]any{"content": "Hal"}, nil), map[string]any{"error": map[string]any{"message": "upstream overloaded", "code": 503}}},
			llm.ErrUnavailable, 503, "upstream overloaded"},
		{"error string mid-stream",
			[]any{map[string]any{"error": "model crashed"}},
			llm.ErrUnavailable, 0, "model crashed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeSSE(w, tt.events...)
			})
			m := newTestModel(t, f, nil)
			var got strings.Builder
			resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")},
				llm.OnDelta(func(d llm.Delta) { got.WriteString(d.Content) }))
			require.Error(t, err)
			assert.Nil(t, resp)
			var apiErr *llm.APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, "openai", apiErr.Provider)
			assert.Equal(t, tt.wantStatus, apiErr.Status)
			assert.ErrorIs(t, err, tt.wantIs)
			assert.Contains(t, err.Error(), tt.wantMsg)
		})
	}
	wiretest.NoGoroutineRunning(t, "openai-go")
}

func TestGenerateStreamIgnoredByServer(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		wiretest.WriteJSON(w, http.StatusOK, completion("not streamed", nil))
	})
	m := newTestModel(t, f, nil)
	_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")}, llm.OnDelta(func(llm.Delta) {}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "asked for an event stream")
}

func TestGenerateHTTPErrors(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		header    map[string]string
		body      string
		wantIs    error
		wantTries int
		wantMsg   string
		retry     time.Duration
	}{
		{"400", 400, nil, `{"error":{"message":"Invalid schema for response_format 'x'","type":"invalid_request_error"}}`,
			llm.ErrBadRequest, 1, "Invalid schema for response_format", 0},
		{"401 names the key variable, never the key", 401, nil,
			`{"error":{"message":"Incorrect API key provided: ` + testKey + `. You can find your API key at https://platform.openai.com.","type":"invalid_request_error","code":"invalid_api_key"}}`,
			llm.ErrAuth, 1, "OPENAI_API_KEY was rejected (401)", 0},
		{"404 unknown model", 404, nil, `{"error":{"message":"The model 'gpt-9' does not exist"}}`, llm.ErrBadRequest, 1, "gpt-9", 0},
		{"429 with a long Retry-After is not retried", 429, map[string]string{"Retry-After": "120"},
			`{"error":{"message":"Rate limit reached","type":"requests"}}`, llm.ErrRateLimited, 1, "Rate limit reached", 120 * time.Second},
		{"500 retried then reported", 500, nil, `{"error":{"message":"The server had an error"}}`, llm.ErrUnavailable, 3, "server had an error", 0},
		{"503 with a plain-text body", 503, nil, "upstream connect error", llm.ErrUnavailable, 3, "upstream connect error", 0},
		{"502 with an HTML body", 502, nil, "<html><body>Bad Gateway</body></html>", llm.ErrUnavailable, 3, "no details", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			})
			m := newTestModel(t, f, nil)
			_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
			require.Error(t, err)
			var apiErr *llm.APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, tt.status, apiErr.Status)
			assert.Equal(t, tt.retry, apiErr.RetryAfter)
			assert.ErrorIs(t, err, tt.wantIs)
			assert.Contains(t, err.Error(), tt.wantMsg)
			assert.NotContains(t, err.Error(), testKey)
			assert.NotContains(t, err.Error(), "0123456789abcdef")
			assert.Len(t, f.Requests(), tt.wantTries)
		})
	}
}

func TestGenerateRetriesRateLimitThenSucceeds(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, attempt int) {
		if attempt == 1 {
			w.Header().Set("Retry-After", "0")
			wiretest.WriteJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]any{"message": "slow down"}})
			return
		}
		wiretest.WriteJSON(w, http.StatusOK, completion("ok", nil))
	})
	m := newTestModel(t, f, nil)
	resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")}, llm.ResponseSchema("r", wiretest.Schema[answer](t)))
	require.NoError(t, err)
	assert.Equal(t, "ok", resp.Content)
	reqs := f.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, reqs[0].Body, reqs[1].Body, "the retry resends the edited body")
	assert.Contains(t, reqs[1].Body, "response_format")
}

func TestGenerateTimeout(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		<-r.Context().Done()
	})
	m := newTestModel(t, f, func(c *Config) { c.Client.Timeout = 50 * time.Millisecond })
	// The server hangs until the client goes: only the timeout ends the
	// call.
	_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
	require.Error(t, err)
	assert.ErrorIs(t, err, llm.ErrTimeout)
	var apiErr *llm.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "openai", apiErr.Provider)
}

func TestGenerateCancelAbortsTheRequest(t *testing.T) {
	aborted := make(chan struct{})
	started := make(chan struct{})
	var once sync.Once
	f := wiretest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		writeSSE(w, delta(map[string]any{"content": "partial"}, nil))
		once.Do(func() { close(started) })
		<-r.Context().Done()
		close(aborted)
	})
	m := newTestModel(t, f, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err := m.Generate(ctx, []schemas.Message{schemas.UserMessage("hi")}, llm.OnDelta(func(llm.Delta) {}))
	assert.ErrorIs(t, err, context.Canceled)
	<-aborted // the server saw the request aborted
	wiretest.NoGoroutineRunning(t, "openai-go")
}

func TestGenerateUnreachableServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	m, err := New(Config{
		BaseURL: "http://" + addr + "/v1",
		Client:  llm.ClientConfig{MaxRetries: -1},
		Getenv:  func(string) string { return "" },
	})
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
	require.Error(t, err)
	assert.ErrorIs(t, err, llm.ErrUnavailable)
	assert.Contains(t, err.Error(), "cannot reach the server")
}

func TestGenerateGoogleSearchIsUnsupported(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {})
	m := newTestModel(t, f, nil)
	_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")}, llm.GoogleSearch())
	assert.ErrorIs(t, err, llm.ErrUnsupported)
	assert.Empty(t, f.Requests())
}

func TestExtraHeaders(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		wiretest.WriteJSON(w, http.StatusOK, completion("ok", nil))
	})
	m := newTestModel(t, f, func(c *Config) {
		c.Header = http.Header{"X-Title": {"deepgraph"}, "Authorization": {"Bearer other"}}
		c.Organization = "org-1"
	})
	_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
	require.NoError(t, err)
	h := f.Only(t).Header
	assert.Equal(t, "deepgraph", h.Get("X-Title"))
	assert.Equal(t, "Bearer "+testKey, h.Get("Authorization"), "Header cannot replace the key")
	assert.Equal(t, "org-1", h.Get("OpenAI-Organization"))
}

func TestNewConfig(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	t.Run("missing key for api.openai.com", func(t *testing.T) {
		_, err := New(Config{Getenv: env(nil)})
		require.Error(t, err)
		assert.ErrorIs(t, err, llm.ErrAuth)
		for _, want := range []string{EnvAPIKey, EnvBaseURL, EnvOllamaHost} {
			assert.Contains(t, err.Error(), want)
		}
	})
	t.Run("key and base URL from the environment", func(t *testing.T) {
		f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			wiretest.WriteJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"message": "bad key"}})
		})
		m, err := New(Config{
			Getenv: env(map[string]string{EnvAPIKey: "sk-from-env-123456", EnvBaseURL: f.URL + "/v1"}),
			Client: llm.ClientConfig{HTTPClient: f.Client()},
		})
		require.NoError(t, err)
		assert.Equal(t, DefaultModel, m.Name())
		_, err = m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "openai: OPENAI_API_KEY was rejected (401): bad key")
		assert.Equal(t, "Bearer sk-from-env-123456", f.Only(t).Header.Get("Authorization"))
	})
	t.Run("keyless compatible server", func(t *testing.T) {
		f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			wiretest.WriteJSON(w, http.StatusUnauthorized, map[string]any{"error": "key required"})
		})
		m, err := New(Config{Provider: "vllm", Model: "qwen", BaseURL: f.URL + "/v1", Getenv: env(nil),
			Client: llm.ClientConfig{HTTPClient: f.Client()}})
		require.NoError(t, err)
		_, err = m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
		require.Error(t, err)
		assert.Empty(t, f.Only(t).Header.Values("Authorization"))
		assert.Contains(t, err.Error(), "vllm: Unauthorized (401): key required (no API key was sent")
	})
	for _, bad := range []Config{
		{BaseURL: "localhost:8000/v1"},
		{BaseURL: "ftp://x/v1", APIKey: "k"},
		{SchemaMode: "xml", APIKey: "k"},
		{TokenField: "n_predict", APIKey: "k"},
	} {
		bad.Getenv = env(nil)
		_, err := New(bad)
		assert.Error(t, err, "%+v", bad)
	}
}

func TestOllamaBaseURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "http://localhost:11434/v1"},
		{"127.0.0.1", "http://127.0.0.1:11434/v1"},
		{"ollama.internal:8080", "http://ollama.internal:8080/v1"},
		{"0.0.0.0", "http://localhost:11434/v1"},
		{":11500", "http://localhost:11500/v1"},
		{"[::1]:11434", "http://[::1]:11434/v1"},
		{"::1", "http://[::1]:11434/v1"},
		{"http://gpu-box", "http://gpu-box:80/v1"},
		{"https://ollama.example.com/", "https://ollama.example.com:443/v1"},
		{"https://example.com:8443/ollama/", "https://example.com:8443/ollama/v1"},
		{"  localhost:11434  ", "http://localhost:11434/v1"},
	}
	for _, tt := range tests {
		got, err := OllamaBaseURL(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
	for _, bad := range []string{"tcp://x:1", "host:99999", "host:abc"} {
		_, err := OllamaBaseURL(bad)
		assert.Error(t, err, bad)
	}
}

func TestNewOllama(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		if r.Header.Get("Authorization") != "" {
			wiretest.WriteJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": "unexpected Authorization"}})
			return
		}
		wiretest.WriteJSON(w, http.StatusOK, completion("llama says hi", nil))
	})
	host := strings.TrimPrefix(f.URL, "http://") // "host:port", no scheme
	env := map[string]string{EnvOllamaHost: host, EnvAPIKey: "sk-must-not-leak-123456"}
	m, err := NewOllama(Config{
		Model:  "llama3.1",
		Getenv: func(k string) string { return env[k] },
		Client: llm.ClientConfig{HTTPClient: f.Client()},
	})
	require.NoError(t, err)
	assert.Equal(t, "ollama", m.Provider())
	resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")}, llm.MaxTokens(10))
	require.NoError(t, err)
	assert.Equal(t, "llama says hi", resp.Content)
	req := f.Only(t)
	assert.Equal(t, "/v1/chat/completions", req.Path)
	assert.Empty(t, req.Header.Values("Authorization"))
	assert.Equal(t, "llama3.1", req.Body["model"])
	assert.Equal(t, 10.0, req.Body["max_tokens"])

	_, err = NewOllama(Config{Getenv: func(string) string { return "" }})
	assert.ErrorIs(t, err, llm.ErrNoModel)
	_, err = NewOllama(Config{Model: "m", Getenv: func(string) string { return "gopher://x" }})
	assert.Error(t, err)
}

func TestOllamaErrorsNameOllama(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		wiretest.WriteJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"message": `model "nope" not found, try pulling it first`}})
	})
	m, err := NewOllama(Config{Model: "nope", BaseURL: f.URL + "/v1", Client: llm.ClientConfig{HTTPClient: f.Client()}})
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
	require.Error(t, err)
	assert.ErrorIs(t, err, llm.ErrBadRequest)
	assert.Equal(t, `ollama: Not Found (404): model "nope" not found, try pulling it first`, err.Error())
}

func TestStrictCompatible(t *testing.T) {
	obj := func(props map[string]*jsonschema.Schema, required ...string) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "object", Properties: props, Required: required, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	}
	str := &jsonschema.Schema{Type: "string"}
	tests := []struct {
		name string
		s    *jsonschema.Schema
		want bool
	}{
		{"nil", nil, false},
		{"struct", wiretest.Schema[answer](t), true},
		{"research types", wiretest.Schema[schemas.SearchQueryList](t), true},
		{"pointer and nested struct", wiretest.Schema[struct {
			In  struct{ A int }  `json:"in"`
			Ptr *struct{ B int } `json:"ptr"`
		}](t), true},
		{"omitempty", wiretest.Schema[answerWithOptional](t), false},
		{"map", wiretest.Schema[struct {
			M map[string]int `json:"m"`
		}](t), false},
		{"interface", wiretest.Schema[struct {
			A any `json:"a"`
		}](t), false},
		{"array root", &jsonschema.Schema{Type: "array", Items: str}, false},
		{"additionalProperties missing", &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"a": str}, Required: []string{"a"}}, false},
		{"oneOf", obj(map[string]*jsonschema.Schema{"a": {OneOf: []*jsonschema.Schema{str}}}, "a"), false},
		{"anyOf inside", obj(map[string]*jsonschema.Schema{"a": {AnyOf: []*jsonschema.Schema{str, {Type: "null"}}}}, "a"), true},
		{"minLength unsupported", obj(map[string]*jsonschema.Schema{"a": {Type: "string", MinLength: new(int)}}, "a"), false},
		{"$defs checked", func() *jsonschema.Schema {
			s := obj(map[string]*jsonschema.Schema{"a": {Ref: "#/$defs/x"}}, "a")
			s.Defs = map[string]*jsonschema.Schema{"x": {Type: "object", Properties: map[string]*jsonschema.Schema{"b": str}}}
			return s
		}(), false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, StrictCompatible(tt.s), tt.name)
	}
}

// Reading error bodies is tested in sdkwire; this is OpenAI's error object.
func TestDecodeError(t *testing.T) {
	tests := []struct {
		raw    string
		msg    string
		status int
		ok     bool
	}{
		{`{"message":"m1","type":"t"}`, "m1", 0, true},
		{`{"type":"only_type"}`, "only_type", 0, true},
		{`{"message":"slow down","type":"requests","code":429}`, "slow down", 429, true},
		{`{"message":"m","code":"invalid_api_key"}`, "m", 0, true},
		{`{"message":"m","code":200}`, "m", 0, true},
		{`[1,2]`, "", 0, false},
	}
	for _, tt := range tests {
		msg, status, ok := decodeError(json.RawMessage(tt.raw))
		assert.Equal(t, tt.ok, ok, tt.raw)
		assert.Equal(t, tt.msg, msg, tt.raw)
		assert.Equal(t, tt.status, status, tt.raw)
	}
}

func TestConcurrentCalls(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		writeSSE(w, delta(map[string]any{"content": "x"}, "stop"), "data: [DONE]\n\n")
	})
	m := newTestModel(t, f, func(c *Config) { c.Client.MaxConcurrency = 2 })
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")}, llm.OnDelta(func(llm.Delta) {}))
			if err == nil && resp.Content != "x" {
				err = errors.New("wrong content " + resp.Content)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.Len(t, f.Requests(), 16)
}

// A stream is a reply only when it finished: an unfinished one, one that
// carried an error, and one whose context ended are not, whatever was read.
func TestReadStreamCatchesPartialSuccess(t *testing.T) {
	chunk := `data: {"choices":[{"index":0,"delta":{"content":"Hal"}}]}` + "\n\n"
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		body string
		ctx  context.Context
		want error
	}{
		{"unfinished stream", chunk, context.Background(), errTruncated},
		{"finished stream", chunk + `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n", context.Background(), nil},
		{"[DONE] without a finish_reason", chunk + "data: [DONE]\n\n", context.Background(), nil},
		{"recorded error", chunk + `data: {"error":{"message":"boom"}}` + "\n\ndata: [DONE]\n\n", context.Background(), sdkwire.ErrStreamError},
		{"cancelled", chunk + "data: [DONE]\n\n", cancelled, context.Canceled},
	}
	for _, tt := range tests {
		raw := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(tt.body))}
		resp, err := readStream(tt.ctx, raw, llm.ToolNames{}, nil)
		if tt.want == nil {
			assert.NoError(t, err, tt.name)
			if assert.NotNil(t, resp, tt.name) {
				assert.Equal(t, "Hal", resp.Content, tt.name)
			}
		} else {
			assert.ErrorIs(t, err, tt.want, tt.name)
			assert.Nil(t, resp, tt.name)
		}
	}
}

func TestReasoningFields(t *testing.T) {
	for _, field := range []string{"reasoning_content", "reasoning"} {
		f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			wiretest.WriteJSON(w, http.StatusOK, completion("answer", map[string]any{field: "because"}))
		})
		m := newTestModel(t, f, nil)
		resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("?")})
		require.NoError(t, err)
		assert.Equal(t, "because", resp.Reasoning, field)
		assert.Equal(t, "answer", resp.Content, field)
	}
}

// Ollama streams a tool call whole, in one chunk; a large argument makes an
// event-stream line longer than langchaingo's 64 KiB scanner limit.
func TestGenerateStreamLongLines(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	args := `{"path":"a.txt","content":"` + big + `"}`
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeSSE(w,
			delta(map[string]any{"role": "assistant", "content": big}, nil),
			delta(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_w", "type": "function",
				"function": map[string]any{"name": "write_file", "arguments": args}}}}, "tool_calls"),
			usageChunk(5, 70000),
			"data: [DONE]\n\n",
		)
	})
	m := newTestModel(t, f, nil)
	var n int
	resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("write")},
		llm.Tools(schemas.ToolDef{Name: "write_file"}), llm.OnDelta(func(d llm.Delta) { n += len(d.Content) }))
	require.NoError(t, err)
	assert.Equal(t, len(big), n)
	assert.Equal(t, big, resp.Content)
	require.Len(t, resp.ToolCalls, 1)
	assert.Equal(t, args, string(resp.ToolCalls[0].Arguments))
	assert.Equal(t, 70005, resp.Usage.TotalTokens)
}
