package anthropic

import (
	"context"
	"encoding/json"
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
	"github.com/deepgraph/deepgraph/llm/internal/wiretest"
	"github.com/deepgraph/deepgraph/schemas"
)

func TestGeneratePlain(t *testing.T) {
	tests := []struct {
		name       string
		cfg        func(*Config)
		opts       []llm.Option
		wantFields map[string]any
		absent     []string
	}{
		{
			name:       "defaults",
			wantFields: map[string]any{"max_tokens": float64(DefaultMaxTokens), "model": DefaultModel},
			absent:     []string{"temperature", "stream", "tools", "tool_choice", "stop_sequences"},
		},
		{
			name:       "options override",
			cfg:        func(c *Config) { c.MaxTokens = 1000; c.Model = "claude-haiku-4-5" },
			opts:       []llm.Option{llm.MaxTokens(64), llm.Temperature(0.2), llm.Stop("###")},
			wantFields: map[string]any{"max_tokens": 64.0, "temperature": 0.2, "stop_sequences": []any{"###"}, "model": "claude-haiku-4-5"},
		},
		{
			name:       "config cap",
			cfg:        func(c *Config) { c.MaxTokens = 1000 },
			opts:       []llm.Option{llm.Temperature(0)},
			wantFields: map[string]any{"max_tokens": 1000.0, "temperature": 0.0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				wiretest.WriteJSON(w, http.StatusOK, message("end_turn", textBlock("Par"), textBlock("is.")))
			})
			m := newTestModel(t, f, tt.cfg)
			resp, err := m.Generate(context.Background(), []schemas.Message{
				schemas.SystemMessage("Be brief."),
				schemas.UserMessage("Capital of France?"),
				schemas.SystemMessage("Answer in English."),
			}, tt.opts...)
			require.NoError(t, err)

			req := f.Only(t)
			assert.Equal(t, http.MethodPost, req.Method)
			assert.Equal(t, "/v1/messages", req.Path)
			assert.Equal(t, testKey, req.Header.Get("X-Api-Key"))
			assert.Equal(t, APIVersion, req.Header.Get("Anthropic-Version"))
			assert.Empty(t, req.Header.Get("Authorization"))
			assert.Equal(t, "Be brief.\n\nAnswer in English.", req.Body["system"])
			assert.JSONEq(t, `[{"role":"user","content":[{"type":"text","text":"Capital of France?"}]}]`, wiretest.JSON(t, req.Body["messages"]))
			for k, v := range tt.wantFields {
				assert.Equal(t, v, req.Body[k], k)
			}
			for _, k := range tt.absent {
				assert.NotContains(t, req.Body, k)
			}

			assert.Equal(t, "Paris.", resp.Content)
			assert.Equal(t, llm.FinishStop, resp.FinishReason)
			assert.Equal(t, "claude-sonnet-4-5-20250929", resp.Model)
			assert.Equal(t, llm.Usage{PromptTokens: 32, CompletionTokens: 3, TotalTokens: 35, CachedTokens: 7, CacheWriteTokens: 5}, resp.Usage)
		})
	}
}

type verdict struct {
	Label string  `json:"label"`
	Score float64 `json:"score"`
	ID    int64   `json:"id"`
}

func TestGenerateStructuredThroughAForcedTool(t *testing.T) {
	schema := wiretest.Schema[verdict](t)
	min0 := 0.0
	schema.Properties["score"].Minimum = &min0
	schema.Properties["label"].AnyOf = []*jsonschema.Schema{{Type: "string", Enum: []any{"good", "bad"}}, {Type: "string", Pattern: "^x-"}}

	// Exact input: a number beyond float64 precision must survive.
	const input = `{"label":"good","score":0.75,"id":12345678901234567890}`
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		wiretest.WriteJSON(w, http.StatusOK, message("tool_use", toolUse("toolu_1", "verdict_v2", input)))
	})
	m := newTestModel(t, f, nil)
	resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("Judge it.")},
		llm.ResponseSchema("verdict v2", schema))
	require.NoError(t, err)
	assert.Equal(t, input, resp.Content)
	assert.Empty(t, resp.ToolCalls, "the structured-output tool is not a tool call")
	assert.Equal(t, llm.FinishStop, resp.FinishReason)

	body := f.Only(t).Body
	tools := body["tools"].([]any)
	require.Len(t, tools, 1)
	tool := tools[0].(map[string]any)
	assert.Equal(t, "verdict_v2", tool["name"])
	assert.JSONEq(t, wiretest.JSON(t, schema), wiretest.JSON(t, tool["input_schema"]), "the full schema is the tool's input schema")
	assert.JSONEq(t, `{"type":"tool","name":"verdict_v2"}`, wiretest.JSON(t, body["tool_choice"]))
}

func TestGenerateStructuredVariants(t *testing.T) {
	t.Run("array schema is wrapped and unwrapped", func(t *testing.T) {
		f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			wiretest.WriteJSON(w, http.StatusOK, message("tool_use", toolUse("toolu_1", "response", `{"value":["a","b"]}`)))
		})
		m := newTestModel(t, f, nil)
		resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("List.")},
			llm.ResponseSchema("", &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string"}}))
		require.NoError(t, err)
		assert.Equal(t, `["a","b"]`, resp.Content)
		tool := f.Only(t).Body["tools"].([]any)[0].(map[string]any)
		assert.JSONEq(t, `{"type":"object","properties":{"value":{"type":"array","items":{"type":"string"}}},"required":["value"],"additionalProperties":false}`,
			wiretest.JSON(t, tool["input_schema"]))
	})
	t.Run("with other tools the model must call one of them", func(t *testing.T) {
		f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			wiretest.WriteJSON(w, http.StatusOK, message("tool_use", textBlock("Searching first."), toolUse("toolu_s", "search", `{"q":"x"}`)))
		})
		m := newTestModel(t, f, nil)
		resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("Judge it.")},
			llm.Tools(schemas.ToolDef{Name: "search"}, schemas.ToolDef{Name: "verdict"}),
			llm.ResponseSchema("verdict", wiretest.Schema[verdict](t)))
		require.NoError(t, err)
		body := f.Only(t).Body
		assert.JSONEq(t, `{"type":"any"}`, wiretest.JSON(t, body["tool_choice"]))
		names := []string{}
		for _, tl := range body["tools"].([]any) {
			names = append(names, tl.(map[string]any)["name"].(string))
		}
		assert.Equal(t, []string{"search", "verdict", "verdict_answer"}, names, "the schema tool does not clash with a user tool")
		assert.Equal(t, "Searching first.", resp.Content)
		assert.Equal(t, llm.FinishToolCalls, resp.FinishReason)
		assert.Equal(t, []schemas.ToolCall{{ID: "toolu_s", Name: "search", Arguments: json.RawMessage(`{"q":"x"}`)}}, resp.ToolCalls)
	})
}

func TestGenerateTools(t *testing.T) {
	params := wiretest.Schema[struct {
		Query string `json:"query"`
	}](t)
	tools := []schemas.ToolDef{{Name: "web_search", Description: "Search the web.", Parameters: params}, {Name: "now"}}
	first := schemas.ToolCall{ID: "toolu_a", Name: "web_search", Arguments: json.RawMessage(`{"query":"go","n":9007199254740993}`)}
	second := schemas.ToolCall{ID: "toolu_b", Name: "now"}
	history := []schemas.Message{
		schemas.UserMessage("What is new?"),
		{Role: schemas.Assistant, Content: "Let me check.", ToolCalls: []schemas.ToolCall{first, second}},
		schemas.ToolResultMessage(first, "results…"),
		schemas.ToolResultMessage(second, "2026-11-05"),
		schemas.UserMessage("Summarise."),
	}
	choices := []struct {
		choice llm.ToolChoice
		want   string
	}{
		{"", ""},
		{llm.ToolAuto, `{"type":"auto"}`},
		{llm.ToolNone, `{"type":"none"}`},
		{llm.ToolRequired, `{"type":"any"}`},
		{"now", `{"type":"tool","name":"now"}`},
	}
	for _, c := range choices {
		t.Run("choice="+string(c.choice), func(t *testing.T) {
			f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				wiretest.WriteJSON(w, http.StatusOK, message("tool_use",
					textBlock("Two lookups."),
					toolUse("toolu_1", "web_search", `{"query":"a"}`),
					toolUse("toolu_2", "web_search", `{"query":"b"}`)))
			})
			m := newTestModel(t, f, nil)
			resp, err := m.Generate(context.Background(), history, llm.Tools(tools...), llm.WithToolChoice(c.choice))
			require.NoError(t, err)

			req := f.Only(t)
			body := req.Body
			assert.JSONEq(t, `[
				{"name":"web_search","description":"Search the web.",
				 "input_schema":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"],"additionalProperties":false}},
				{"name":"now","input_schema":{"type":"object","properties":{}}}
			]`, wiretest.JSON(t, body["tools"]))
			if c.want == "" {
				assert.NotContains(t, body, "tool_choice")
			} else {
				assert.JSONEq(t, c.want, wiretest.JSON(t, body["tool_choice"]))
			}
			// One assistant turn with text and both calls (exact input), one
			// user turn with both results and the next question.
			assert.JSONEq(t, `[
				{"role":"user","content":[{"type":"text","text":"What is new?"}]},
				{"role":"assistant","content":[
					{"type":"text","text":"Let me check."},
					{"type":"tool_use","id":"toolu_a","name":"web_search","input":{"query":"go","n":9007199254740993}},
					{"type":"tool_use","id":"toolu_b","name":"now","input":{}}]},
				{"role":"user","content":[
					{"type":"tool_result","tool_use_id":"toolu_a","content":"results…"},
					{"type":"tool_result","tool_use_id":"toolu_b","content":"2026-11-05"},
					{"type":"text","text":"Summarise."}]}
			]`, wiretest.JSON(t, body["messages"]))
			assert.Contains(t, req.Raw, `"n":9007199254740993`, "inputs are sent exactly")

			assert.Equal(t, "Two lookups.", resp.Content)
			assert.Equal(t, llm.FinishToolCalls, resp.FinishReason)
			assert.Equal(t, []schemas.ToolCall{
				{ID: "toolu_1", Name: "web_search", Arguments: json.RawMessage(`{"query":"a"}`)},
				{ID: "toolu_2", Name: "web_search", Arguments: json.RawMessage(`{"query":"b"}`)},
			}, resp.ToolCalls)
		})
	}
}

func TestGenerateRejectsBadRequestsBeforeSending(t *testing.T) {
	tests := []struct {
		name string
		msgs []schemas.Message
		opts []llm.Option
	}{
		{"choice names an unknown tool", []schemas.Message{schemas.UserMessage("x")},
			[]llm.Option{llm.Tools(schemas.ToolDef{Name: "a"}), llm.WithToolChoice("b")}},
		{"required without tools", []schemas.Message{schemas.UserMessage("x")}, []llm.Option{llm.WithToolChoice(llm.ToolRequired)}},
		{"tool result without call ID", []schemas.Message{{Role: schemas.Tool, Content: "r"}}, nil},
		{"tool call without ID", []schemas.Message{{Role: schemas.Assistant, ToolCalls: []schemas.ToolCall{{Name: "a"}}}}, nil},
		{"only system messages", []schemas.Message{schemas.SystemMessage("s")}, nil},
		{"unknown role", []schemas.Message{{Role: "narrator"}}, nil},
		{"no messages", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				wiretest.WriteJSON(w, http.StatusOK, message("end_turn", textBlock("x")))
			})
			m := newTestModel(t, f, nil)
			_, err := m.Generate(context.Background(), tt.msgs, tt.opts...)
			assert.ErrorIs(t, err, llm.ErrBadRequest)
			assert.Empty(t, f.Requests())
		})
	}
}

func TestGenerateImages(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		wiretest.WriteJSON(w, http.StatusOK, message("end_turn", textBlock("a cat")))
	})
	m := newTestModel(t, f, nil)
	call := schemas.ToolCall{ID: "toolu_s", Name: "screenshot", Arguments: json.RawMessage(`{}`)}
	shot := schemas.ToolResultMessage(call, "taken")
	shot.Images = []schemas.Image{{MIMEType: "image/png", Data: []byte{1, 2}}}
	_, err := m.Generate(context.Background(), []schemas.Message{
		{Role: schemas.User, Content: "What is this?", Images: []schemas.Image{{MIMEType: "image/jpeg", Data: []byte("jpg")}}},
		{Role: schemas.Assistant, ToolCalls: []schemas.ToolCall{call}},
		shot,
	})
	require.NoError(t, err)
	assert.JSONEq(t, `[
		{"role":"user","content":[{"type":"text","text":"What is this?"},
			{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"anBn"}}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_s","name":"screenshot","input":{}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_s","content":"taken"},
			{"type":"text","text":"Images returned by the tool calls above:"},
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AQI="}}]}
	]`, wiretest.JSON(t, f.Only(t).Body["messages"]))
}

func TestGenerateEmptyReply(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		wiretest.WriteJSON(w, http.StatusOK, message("end_turn"))
	})
	m := newTestModel(t, f, nil)
	resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("ok?")})
	require.NoError(t, err, "a complete reply without content blocks is not an error")
	assert.Empty(t, resp.Content)
	assert.Equal(t, llm.FinishStop, resp.FinishReason)
	assert.Equal(t, 32, resp.Usage.PromptTokens)
	assert.Equal(t, "claude-sonnet-4-5-20250929", resp.Model)
}

func TestGenerateStream(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeEvents(w,
			messageStart(25),
			blockStart(0, map[string]any{"type": "text", "text": ""}),
			map[string]any{"type": "ping"},
			textDelta(0, "Hel"),
			map[string]any{"type": "future_event_type", "x": 1},
			textDelta(0, "lo"),
			blockStop(0),
			messageDelta("end_turn", 15),
			messageStop(),
		)
	})
	m := newTestModel(t, f, nil)
	var deltas []llm.Delta
	resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")},
		llm.OnDelta(func(d llm.Delta) { deltas = append(deltas, d) }))
	require.NoError(t, err)
	assert.Equal(t, true, f.Only(t).Body["stream"])
	assert.Equal(t, []llm.Delta{{Content: "Hel"}, {Content: "lo"}}, deltas)
	assert.Equal(t, "Hello", resp.Content)
	assert.Equal(t, llm.FinishStop, resp.FinishReason)
	assert.Equal(t, "claude-sonnet-4-5-20250929", resp.Model)
	assert.Equal(t, llm.Usage{PromptTokens: 29, CompletionTokens: 15, TotalTokens: 44, CachedTokens: 4}, resp.Usage)
}

func TestGenerateStreamToolCalls(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeEvents(w,
			messageStart(10),
			blockStart(0, map[string]any{"type": "text", "text": ""}),
			textDelta(0, "Looking up."),
			blockStop(0),
			blockStart(1, map[string]any{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": map[string]any{}}),
			jsonDelta(1, ""),
			jsonDelta(1, `{"k": `),
			jsonDelta(1, `"a", "big": 12345678901234567890}`),
			blockStop(1),
			blockStart(2, map[string]any{"type": "tool_use", "id": "toolu_2", "name": "lookup", "input": map[string]any{}}),
			jsonDelta(2, `{"k":"b"}`),
			blockStop(2),
			messageDelta("tool_use", 30),
			messageStop(),
		)
	})
	m := newTestModel(t, f, nil)
	var content strings.Builder
	resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("a and b")},
		llm.Tools(schemas.ToolDef{Name: "lookup"}),
		llm.OnDelta(func(d llm.Delta) { content.WriteString(d.Content) }))
	require.NoError(t, err)
	assert.Equal(t, "Looking up.", content.String(), "tool input is not content")
	assert.Equal(t, "Looking up.", resp.Content)
	assert.Equal(t, llm.FinishToolCalls, resp.FinishReason)
	assert.Equal(t, []schemas.ToolCall{
		{ID: "toolu_1", Name: "lookup", Arguments: json.RawMessage(`{"k": "a", "big": 12345678901234567890}`)},
		{ID: "toolu_2", Name: "lookup", Arguments: json.RawMessage(`{"k":"b"}`)},
	}, resp.ToolCalls)
}

func TestGenerateStreamStructured(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeEvents(w,
			messageStart(10),
			blockStart(0, map[string]any{"type": "tool_use", "id": "toolu_1", "name": "verdict", "input": map[string]any{}}),
			jsonDelta(0, `{"label":"good",`),
			jsonDelta(0, `"score":1,"id":2}`),
			blockStop(0),
			messageDelta("tool_use", 12),
			messageStop(),
		)
	})
	m := newTestModel(t, f, nil)
	var deltas []string
	resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("judge")},
		llm.ResponseSchema("verdict", wiretest.Schema[verdict](t)),
		llm.OnDelta(func(d llm.Delta) { deltas = append(deltas, d.Content) }))
	require.NoError(t, err)
	assert.Equal(t, []string{`{"label":"good",`, `"score":1,"id":2}`}, deltas, "the structured reply streams as content")
	assert.Equal(t, `{"label":"good","score":1,"id":2}`, resp.Content)
	assert.Equal(t, llm.FinishStop, resp.FinishReason)
	assert.Empty(t, resp.ToolCalls)
}

func TestGenerateStreamFailures(t *testing.T) {
	errorEvent := func(typ, msg string) map[string]any {
		return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	}
	tests := []struct {
		name       string
		events     []any
		wantIs     error
		wantStatus int
		wantMsg    string
	}{
		{"ends before message_stop",
			[]any{messageStart(1), blockStart(0, map[string]any{"type": "text"}), textDelta(0, "Hal")},
			llm.ErrUnavailable, 0, "incomplete"},
		{"cut inside a line",
			[]any{messageStart(1), blockStart(0, map[string]any{"type": "text"}), "event: content_block_delta\ndata: {\"type\":\"content_bl"},
			llm.ErrStreamBroken, 0, "broke off: unexpected EOF"},
		{"overloaded error event",
			[]any{messageStart(1), blockStart(0, map[string]any{"type": "text"}), textDelta(0, "Hal"), errorEvent("overloaded_error", "Overloaded"), messageStop()},
			llm.ErrUnavailable, 529, "overloaded_error: Overloaded"},
		{"rate limit error event",
			[]any{errorEvent("rate_limit_error", "slow down")},
			llm.ErrRateLimited, 429, "slow down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeEvents(w, tt.events...)
			})
			m := newTestModel(t, f, nil)
			resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")}, llm.OnDelta(func(llm.Delta) {}))
			require.Error(t, err)
			assert.Nil(t, resp)
			var apiErr *llm.APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, "anthropic", apiErr.Provider)
			assert.Equal(t, tt.wantStatus, apiErr.Status)
			assert.ErrorIs(t, err, tt.wantIs)
			assert.Contains(t, err.Error(), tt.wantMsg)
		})
	}
	wiretest.NoGoroutineRunning(t, "anthropic-sdk-go")
}

func TestGenerateHTTPErrors(t *testing.T) {
	body := func(typ, msg string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_1"}`
	}
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
		{"400", 400, nil, body("invalid_request_error", "max_tokens: must be positive"), llm.ErrBadRequest, 1, "max_tokens: must be positive", 0},
		{"401 names the key variable, never the key", 401, nil, body("authentication_error", "invalid x-api-key "+testKey),
			llm.ErrAuth, 1, "anthropic: ANTHROPIC_API_KEY was rejected (401): authentication_error: invalid x-api-key", 0},
		{"403", 403, nil, body("permission_error", "no access"), llm.ErrAuth, 1, "no access", 0},
		{"404", 404, nil, body("not_found_error", "model: claude-9"), llm.ErrBadRequest, 1, "claude-9", 0},
		{"429 with a long Retry-After", 429, map[string]string{"Retry-After": "120"}, body("rate_limit_error", "Rate limited"),
			llm.ErrRateLimited, 1, "Rate limited", 120 * time.Second},
		{"500 retried", 500, nil, body("api_error", "Internal server error"), llm.ErrUnavailable, 3, "Internal server error", 0},
		{"503 plain text", 503, nil, "upstream unavailable", llm.ErrUnavailable, 3, "upstream unavailable", 0},
		{"529 overloaded retried", 529, nil, body("overloaded_error", "Overloaded"), llm.ErrUnavailable, 3, "Overloaded", 0},
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
			assert.NotContains(t, err.Error(), "0123456789abcdef")
			assert.Len(t, f.Requests(), tt.wantTries)
		})
	}
}

func TestGenerateRetriesRateLimitThenSucceeds(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, attempt int) {
		if attempt == 1 {
			w.Header().Set("Retry-After", "0")
			wiretest.WriteJSON(w, http.StatusTooManyRequests, map[string]any{"type": "error", "error": map[string]any{"type": "rate_limit_error", "message": "wait"}})
			return
		}
		wiretest.WriteJSON(w, http.StatusOK, message("end_turn", textBlock("ok")))
	})
	m := newTestModel(t, f, nil)
	resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")}, llm.Tools(schemas.ToolDef{Name: "t"}), llm.WithToolChoice(llm.ToolAuto))
	require.NoError(t, err)
	assert.Equal(t, "ok", resp.Content)
	reqs := f.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, reqs[0].Body, reqs[1].Body, "the retry resends the edited body")
	assert.Contains(t, reqs[1].Body, "tool_choice")
}

func TestGenerateTimeout(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		<-r.Context().Done()
	})
	m := newTestModel(t, f, func(c *Config) { c.Client.Timeout = 50 * time.Millisecond })
	// The server hangs until the client goes: only the timeout ends the
	// call.
	_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
	assert.ErrorIs(t, err, llm.ErrTimeout)
}

func TestGenerateCancelAbortsTheRequest(t *testing.T) {
	aborted := make(chan struct{})
	started := make(chan struct{})
	var once sync.Once
	f := wiretest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		writeEvents(w, messageStart(1), blockStart(0, map[string]any{"type": "text"}), textDelta(0, "part"))
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
	wiretest.NoGoroutineRunning(t, "anthropic-sdk-go")
}

func TestGenerateUnreachableServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	m, err := New(Config{APIKey: testKey, BaseURL: "http://" + addr, Client: llm.ClientConfig{MaxRetries: -1}})
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
	assert.ErrorIs(t, err, llm.ErrUnavailable)
	assert.Contains(t, err.Error(), "cannot reach the server")
}

func TestGenerateGoogleSearchIsUnsupported(t *testing.T) {
	f := wiretest.NewServer(t, func(http.ResponseWriter, *http.Request, int) {})
	m := newTestModel(t, f, nil)
	_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")}, llm.GoogleSearch())
	assert.ErrorIs(t, err, llm.ErrUnsupported)
	assert.Empty(t, f.Requests())
}

func TestNewConfig(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	t.Run("missing key for api.anthropic.com", func(t *testing.T) {
		_, err := New(Config{Getenv: env(nil)})
		require.Error(t, err)
		assert.ErrorIs(t, err, llm.ErrAuth)
		assert.Contains(t, err.Error(), EnvAPIKey)
		assert.Contains(t, err.Error(), EnvBaseURL)
	})
	t.Run("key and base URL from the environment, /v1 not doubled", func(t *testing.T) {
		f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			wiretest.WriteJSON(w, http.StatusOK, message("end_turn", textBlock("ok")))
		})
		m, err := New(Config{
			Getenv: env(map[string]string{EnvAPIKey: "sk-ant-env-123456", EnvBaseURL: f.URL + "/v1/"}),
			Client: llm.ClientConfig{HTTPClient: f.Client()},
		})
		require.NoError(t, err)
		assert.Equal(t, DefaultModel, m.Name())
		_, err = m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
		require.NoError(t, err)
		req := f.Only(t)
		assert.Equal(t, "/v1/messages", req.Path)
		assert.Equal(t, "sk-ant-env-123456", req.Header.Get("X-Api-Key"))
	})
	t.Run("keyless gateway with extra headers", func(t *testing.T) {
		f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			wiretest.WriteJSON(w, http.StatusUnauthorized, map[string]any{"error": "key required"})
		})
		m, err := New(Config{
			Provider: "gateway", BaseURL: f.URL + "/anthropic", Getenv: env(nil),
			Header: http.Header{"Anthropic-Beta": {"prompt-caching-2024-07-31"}, "X-Api-Key": {"nope"}},
			Client: llm.ClientConfig{HTTPClient: f.Client()},
		})
		require.NoError(t, err)
		_, err = m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
		require.Error(t, err)
		req := f.Only(t)
		assert.Equal(t, "/anthropic/v1/messages", req.Path)
		assert.Empty(t, req.Header.Values("X-Api-Key"))
		assert.Equal(t, "prompt-caching-2024-07-31", req.Header.Get("Anthropic-Beta"))
		assert.Contains(t, err.Error(), "gateway: Unauthorized (401): key required (no API key was sent")
	})
	for _, bad := range []Config{{BaseURL: "api.anthropic.com", APIKey: "k"}, {MaxTokens: -1, APIKey: "k"}} {
		bad.Getenv = env(nil)
		_, err := New(bad)
		assert.Error(t, err, "%+v", bad)
	}
}

// Reading error bodies is tested in sdkwire; this is Anthropic's error
// object, whose type stands for a status.
func TestDecodeError(t *testing.T) {
	tests := []struct {
		raw    string
		msg    string
		status int
		ok     bool
	}{
		{`{"type":"not_found_error","message":"model: x"}`, "not_found_error: model: x", 404, true},
		{`{"type":"overloaded_error","message":"Overloaded"}`, "overloaded_error: Overloaded", 529, true},
		{`{"type":"rate_limit_error"}`, "rate_limit_error", 429, true},
		{`{"type":"new_kind_error","message":"m"}`, "new_kind_error: m", 0, true},
		{`{"message":"no type"}`, "no type", 0, true},
		{`42`, "", 0, false},
	}
	for _, tt := range tests {
		msg, status, ok := decodeError(json.RawMessage(tt.raw))
		assert.Equal(t, tt.ok, ok, tt.raw)
		assert.Equal(t, tt.msg, msg, tt.raw)
		assert.Equal(t, tt.status, status, tt.raw)
	}
}

func TestFinishReason(t *testing.T) {
	tests := []struct {
		in    string
		calls bool
		want  llm.FinishReason
	}{
		{"end_turn", false, llm.FinishStop},
		{"stop_sequence", false, llm.FinishStop},
		{"tool_use", true, llm.FinishToolCalls},
		{"tool_use", false, llm.FinishStop},
		{"max_tokens", false, llm.FinishLength},
		{"refusal", false, llm.FinishContentFilter},
		{"pause_turn", false, llm.FinishOther},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, finishReason(tt.in, tt.calls), tt.in)
	}
}

// A delta longer than langchaingo's 64 KiB scanner limit still arrives.
func TestGenerateStreamLongLines(t *testing.T) {
	big := strings.Repeat("y", 200<<10)
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeEvents(w,
			messageStart(3),
			blockStart(0, map[string]any{"type": "text", "text": ""}),
			textDelta(0, big),
			textDelta(0, "!"),
			blockStop(0),
			messageDelta("max_tokens", 60000),
			messageStop(),
		)
	})
	m := newTestModel(t, f, nil)
	resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("long")}, llm.OnDelta(func(llm.Delta) {}))
	require.NoError(t, err)
	assert.Equal(t, big+"!", resp.Content)
	assert.Equal(t, llm.FinishLength, resp.FinishReason)
	assert.Equal(t, 60000, resp.Usage.CompletionTokens)
}

func TestGenerateStreamThinkingAndEmpty(t *testing.T) {
	t.Run("thinking streams as reasoning", func(t *testing.T) {
		f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeEvents(w,
				messageStart(3),
				blockStart(0, map[string]any{"type": "thinking", "thinking": ""}),
				map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "thinking_delta", "thinking": "Hmm."}},
				map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "signature_delta", "signature": "sig"}},
				blockStop(0),
				blockStart(1, map[string]any{"type": "text", "text": ""}),
				textDelta(1, "Yes."),
				blockStop(1),
				messageDelta("end_turn", 9),
				messageStop(),
			)
		})
		m := newTestModel(t, f, nil)
		var deltas []llm.Delta
		resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("?")},
			llm.OnDelta(func(d llm.Delta) { deltas = append(deltas, d) }))
		require.NoError(t, err)
		assert.Equal(t, []llm.Delta{{Reasoning: "Hmm."}, {Content: "Yes."}}, deltas)
		assert.Equal(t, "Hmm.", resp.Reasoning)
		assert.Equal(t, "Yes.", resp.Content)
	})
	t.Run("a complete stream without content blocks", func(t *testing.T) {
		f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeEvents(w, messageStart(3), messageDelta("end_turn", 1), messageStop())
		})
		m := newTestModel(t, f, nil)
		resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("?")}, llm.OnDelta(func(llm.Delta) {}))
		require.NoError(t, err)
		assert.Empty(t, resp.Content)
		assert.Equal(t, llm.FinishStop, resp.FinishReason)
		assert.Equal(t, llm.Usage{PromptTokens: 7, CompletionTokens: 1, TotalTokens: 8, CachedTokens: 4}, resp.Usage)
	})
}
