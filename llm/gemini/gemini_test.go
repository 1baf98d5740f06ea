package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

const okReply = `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}],"modelVersion":"gemini-2.5-flash-001"}`

func TestNewRequiresKey(t *testing.T) {
	_, err := New(context.Background(), Config{APIKey: "  "})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNoAPIKey)
	for _, want := range []string{EnvAPIKey, EnvGoogleAPIKey, apiKeyURL} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestNewDefaults(t *testing.T) {
	m, err := New(context.Background(), Config{APIKey: testKey})
	require.NoError(t, err)
	assert.Equal(t, DefaultModel, m.Name())

	_, err = New(context.Background(), Config{APIKey: testKey, Model: "gemini?x=1"})
	assert.ErrorIs(t, err, llm.ErrNoModel)

	for _, base := range []string{"ftp://proxy.example/", "proxy.example:8080", "https://user:s3cret@proxy.example/?k=v", "http://%zz"} {
		_, err = New(context.Background(), Config{APIKey: testKey, BaseURL: base})
		require.ErrorIs(t, err, llm.ErrBadRequest, base)
		assert.Contains(t, err.Error(), EnvBaseURL)
		assert.NotContains(t, err.Error(), "s3cret", "the URL's password is not repeated")
	}
}

func TestWithEnv(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		cfg      Config
		wantKey  string
		wantEnv  string
		wantBase string
	}{
		{name: "gemini key", env: map[string]string{EnvAPIKey: "g-key"}, wantKey: "g-key", wantEnv: EnvAPIKey},
		{name: "google key", env: map[string]string{EnvGoogleAPIKey: "o-key"}, wantKey: "o-key", wantEnv: EnvGoogleAPIKey},
		{name: "gemini wins over google", env: map[string]string{EnvAPIKey: "g-key", EnvGoogleAPIKey: "o-key"}, wantKey: "g-key", wantEnv: EnvAPIKey},
		{name: "empty gemini falls back", env: map[string]string{EnvAPIKey: " ", EnvGoogleAPIKey: "o-key"}, wantKey: "o-key", wantEnv: EnvGoogleAPIKey},
		{name: "key is trimmed", env: map[string]string{EnvAPIKey: "g-key\n"}, wantKey: "g-key", wantEnv: EnvAPIKey},
		{name: "config wins", env: map[string]string{EnvAPIKey: "g-key"}, cfg: Config{APIKey: "c-key"}, wantKey: "c-key"},
		{name: "base url", env: map[string]string{EnvBaseURL: "http://proxy:8080/"}, wantBase: "http://proxy:8080/"},
		{name: "config base url wins", env: map[string]string{EnvBaseURL: "http://proxy/"}, cfg: Config{BaseURL: "http://mine/"}, wantBase: "http://mine/"},
		{name: "nothing set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withEnv(tt.cfg, func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			assert.Equal(t, tt.wantKey, got.APIKey)
			assert.Equal(t, tt.wantEnv, got.KeyEnv)
			assert.Equal(t, tt.wantBase, got.BaseURL)
		})
	}
}

func TestNewFromEnv(t *testing.T) {
	f := newFake(t, reply(http.StatusUnauthorized, errorBody(401, "UNAUTHENTICATED", "bad credentials")))
	t.Setenv(EnvAPIKey, "")
	t.Setenv(EnvGoogleAPIKey, testKey)
	t.Setenv(EnvBaseURL, f.srv.URL)
	m, err := NewFromEnv(context.Background(), Config{Client: fastClient()})
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "GOOGLE_API_KEY was rejected (401)")
	require.Len(t, f.requests(), 1)
	assert.Equal(t, testKey, f.requests()[0].Header.Get("x-goog-api-key"))

	t.Setenv(EnvGoogleAPIKey, "")
	_, err = NewFromEnv(context.Background(), Config{})
	assert.ErrorIs(t, err, ErrNoAPIKey)
}

func weatherTools() []schemas.ToolDef {
	return []schemas.ToolDef{
		{
			Name:        "get_weather",
			Description: "Current weather in a city.",
			Parameters: &jsonschema.Schema{
				Type:       "object",
				Properties: map[string]*jsonschema.Schema{"city": {Type: "string"}},
				Required:   []string{"city"},
			},
		},
		{Name: "now", Description: "The current time."},
	}
}

const weatherDecls = `[{"functionDeclarations":[` +
	`{"name":"get_weather","description":"Current weather in a city.","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},` +
	`{"name":"now","description":"The current time."}]}]`

func TestGenerateRequestShape(t *testing.T) {
	answer := &jsonschema.Schema{
		Type:       "object",
		Properties: map[string]*jsonschema.Schema{"answer": {Type: "string"}, "sources": {Type: "array", Items: &jsonschema.Schema{Type: "string"}}},
		Required:   []string{"answer"},
	}
	fallbackSystem, err := json.Marshal(map[string]any{
		"role":  "user",
		"parts": []map[string]string{{"text": "Be brief."}, {"text": llm.SchemaInstructions("answer", answer)}},
	})
	require.NoError(t, err)
	user := []schemas.Message{schemas.SystemMessage("Be brief."), schemas.UserMessage("Who won Euro 2024?")}
	const userContents = `[{"role":"user","parts":[{"text":"Who won Euro 2024?"}]}]`
	const system = `{"role":"user","parts":[{"text":"Be brief."}]}`
	const answerSchema = `{"type":"object","properties":{"answer":{"type":"string"},"sources":{"type":"array","items":{"type":"string"}}},"required":["answer"]}`

	tests := []struct {
		name   string
		model  string
		thinks bool
		msgs   []schemas.Message
		opts   []llm.Option
		// Expected JSON of each part of the body; "" means absent.
		contents, system, tools, toolConfig, genConfig string
	}{
		{
			name:      "sampling options",
			msgs:      user,
			opts:      []llm.Option{llm.Temperature(0.25), llm.MaxTokens(256), llm.Stop("END", "STOP")},
			contents:  userContents,
			system:    system,
			genConfig: `{"temperature":0.25,"maxOutputTokens":256,"stopSequences":["END","STOP"]}`,
		},
		{
			name:       "tools, default choice",
			msgs:       user,
			opts:       []llm.Option{llm.Tools(weatherTools()...)},
			contents:   userContents,
			system:     system,
			tools:      weatherDecls,
			toolConfig: "",
		},
		{
			name:       "tools, auto",
			msgs:       user,
			opts:       []llm.Option{llm.Tools(weatherTools()...), llm.WithToolChoice(llm.ToolAuto)},
			contents:   userContents,
			system:     system,
			tools:      weatherDecls,
			toolConfig: `{"functionCallingConfig":{"mode":"AUTO"}}`,
		},
		{
			name:       "tools, none",
			msgs:       user,
			opts:       []llm.Option{llm.Tools(weatherTools()...), llm.WithToolChoice(llm.ToolNone)},
			contents:   userContents,
			system:     system,
			tools:      weatherDecls,
			toolConfig: `{"functionCallingConfig":{"mode":"NONE"}}`,
		},
		{
			name:       "tools, required",
			msgs:       user,
			opts:       []llm.Option{llm.Tools(weatherTools()...), llm.WithToolChoice(llm.ToolRequired)},
			contents:   userContents,
			system:     system,
			tools:      weatherDecls,
			toolConfig: `{"functionCallingConfig":{"mode":"ANY"}}`,
		},
		{
			name:       "tools, one named",
			msgs:       user,
			opts:       []llm.Option{llm.Tools(weatherTools()...), llm.WithToolChoice("now")},
			contents:   userContents,
			system:     system,
			tools:      weatherDecls,
			toolConfig: `{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["now"]}}`,
		},
		{
			name:       "auto choice without tools is dropped",
			msgs:       user,
			opts:       []llm.Option{llm.WithToolChoice(llm.ToolAuto)},
			contents:   userContents,
			system:     system,
			toolConfig: "",
		},
		{
			name:      "google search",
			msgs:      user,
			opts:      []llm.Option{llm.GoogleSearch(), llm.Temperature(0)},
			contents:  userContents,
			system:    system,
			tools:     `[{"googleSearch":{}}]`,
			genConfig: `{"temperature":0}`,
		},
		{
			name:      "schema, native",
			msgs:      user,
			opts:      []llm.Option{llm.ResponseSchema("answer", answer)},
			contents:  userContents,
			system:    system,
			genConfig: `{"responseMimeType":"application/json","responseJsonSchema":` + answerSchema + `}`,
		},
		{
			name:      "schema with google search on gemini 3, native",
			model:     "gemini-3-flash-preview",
			msgs:      user,
			opts:      []llm.Option{llm.ResponseSchema("answer", answer), llm.GoogleSearch()},
			contents:  userContents,
			system:    system,
			tools:     `[{"googleSearch":{}}]`,
			genConfig: `{"responseMimeType":"application/json","responseJsonSchema":` + answerSchema + `}`,
		},
		{
			name:     "schema with google search on gemini 2.5, as instructions",
			model:    "models/gemini-2.5-flash",
			msgs:     user,
			opts:     []llm.Option{llm.ResponseSchema("answer", answer), llm.GoogleSearch()},
			contents: userContents,
			system:   string(fallbackSystem),
			tools:    `[{"googleSearch":{}}]`,
		},
		{
			name:     "schema with function tools on gemini 2.0, as instructions",
			model:    "gemini-2.0-flash",
			msgs:     user,
			opts:     []llm.Option{llm.ResponseSchema("answer", answer), llm.Tools(weatherTools()...)},
			contents: userContents,
			system:   string(fallbackSystem),
			tools:    weatherDecls,
		},
		{
			name:      "include thoughts",
			thinks:    true,
			msgs:      []schemas.Message{schemas.UserMessage("Think.")},
			contents:  `[{"role":"user","parts":[{"text":"Think."}]}]`,
			genConfig: `{"thinkingConfig":{"includeThoughts":true}}`,
		},
		{
			name: "conversation with tool calls, results and images",
			msgs: []schemas.Message{
				schemas.SystemMessage("One."),
				schemas.SystemMessage("Two."),
				{Role: schemas.User, Content: "Weather here?", Images: []schemas.Image{{MIMEType: "image/png", Data: []byte("PNG")}}},
				{Role: schemas.Assistant, Content: "Checking.", ToolCalls: []schemas.ToolCall{
					{ID: "fc-1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Zürich"}`), Signature: []byte("sig-1")},
					{ID: generatedIDPrefix + "abc", Name: "now", Arguments: nil},
				}},
				{Role: schemas.Tool, ToolCallID: "fc-1", Content: `{"temp_c":21}`},
				{Role: schemas.Tool, ToolCallID: generatedIDPrefix + "abc", Name: "now", Content: "12:00"},
				{Role: schemas.Assistant},
				schemas.AssistantMessage("21°C at noon."),
				schemas.UserMessage("Thanks"),
			},
			contents: `[` +
				`{"role":"user","parts":[{"text":"Weather here?"},{"inlineData":{"mimeType":"image/png","data":"UE5H"}}]},` +
				`{"role":"model","parts":[{"text":"Checking."},` +
				`{"functionCall":{"id":"fc-1","name":"get_weather","args":{"city":"Zürich"}},"thoughtSignature":"c2lnLTE="},` +
				`{"functionCall":{"name":"now"}}]},` +
				`{"role":"user","parts":[` +
				`{"functionResponse":{"id":"fc-1","name":"get_weather","response":{"output":"{\"temp_c\":21}"}}},` +
				`{"functionResponse":{"name":"now","response":{"output":"12:00"}}}]},` +
				`{"role":"model","parts":[{"text":"21°C at noon."}]},` +
				`{"role":"user","parts":[{"text":"Thanks"}]}]`,
			system: `{"role":"user","parts":[{"text":"One."},{"text":"Two."}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, reply(http.StatusOK, okReply))
			m := f.model(t, Config{Model: tt.model, IncludeThoughts: tt.thinks})
			resp, err := m.Generate(context.Background(), tt.msgs, tt.opts...)
			require.NoError(t, err)
			assert.Equal(t, "ok", resp.Content)

			reqs := f.requests()
			require.Len(t, reqs, 1)
			r := reqs[0]
			model := tt.model
			if model == "" {
				model = DefaultModel
			}
			model = strings.TrimPrefix(model, "models/")
			assert.Equal(t, http.MethodPost, r.Method)
			assert.Equal(t, "/v1beta/models/"+model+":generateContent", r.Path)
			assert.Empty(t, r.Query)
			assert.Equal(t, testKey, r.Header.Get("x-goog-api-key"))
			assert.Empty(t, r.Header.Get("Authorization"))

			w := r.wire(t)
			assertJSON(t, tt.contents, w.Contents, "contents")
			assertJSON(t, tt.system, w.SystemInstruction, "systemInstruction")
			assertJSON(t, tt.tools, w.Tools, "tools")
			assertJSON(t, tt.toolConfig, w.ToolConfig, "toolConfig")
			assertJSON(t, tt.genConfig, w.GenerationConfig, "generationConfig")
		})
	}
}

func assertJSON(t *testing.T, want string, got json.RawMessage, what string) {
	t.Helper()
	if want == "" {
		// generationConfig is left out when nothing is set; an empty object
		// would do as well.
		if len(got) > 0 {
			assert.JSONEq(t, `{}`, string(got), "%s should be absent or empty", what)
		}
		return
	}
	if assert.NotEmpty(t, got, "%s is missing", what) {
		assert.JSONEq(t, want, string(got), "%s: got %s", what, compact(t, got))
	}
}

func TestGeneratePlainReply(t *testing.T) {
	f := newFake(t, reply(http.StatusOK, `{
	  "candidates": [{"content": {"role": "model", "parts": [{"text": "Spain won "}, {"text": "Euro 2024."}]},
	                  "finishReason": "STOP", "index": 0}],
	  "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 5, "totalTokenCount": 40,
	                    "cachedContentTokenCount": 3, "thoughtsTokenCount": 20, "toolUsePromptTokenCount": 3},
	  "modelVersion": "gemini-2.5-flash-001", "responseId": "r-1"}`))
	resp, err := f.model(t, Config{}).Generate(context.Background(), []schemas.Message{schemas.UserMessage("Who won?")})
	require.NoError(t, err)
	assert.Equal(t, &llm.Response{
		Content:      "Spain won Euro 2024.",
		Parts:        []string{"Spain won ", "Euro 2024."},
		FinishReason: llm.FinishStop,
		Usage:        llm.Usage{PromptTokens: 15, CompletionTokens: 5, TotalTokens: 40, CachedTokens: 3, ReasoningTokens: 20},
		Model:        "gemini-2.5-flash-001",
	}, resp)
}

func TestGenerateFinishReasons(t *testing.T) {
	tests := []struct {
		name, body string
		want       llm.FinishReason
		content    string
	}{
		{"max tokens", `{"candidates":[{"content":{"parts":[{"text":"Spain w"}]},"finishReason":"MAX_TOKENS"}]}`, llm.FinishLength, "Spain w"},
		{"safety", `{"candidates":[{"finishReason":"SAFETY"}]}`, llm.FinishContentFilter, ""},
		{"recitation", `{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"RECITATION"}]}`, llm.FinishContentFilter, "x"},
		{"malformed call", `{"candidates":[{"finishReason":"MALFORMED_FUNCTION_CALL"}]}`, llm.FinishOther, ""},
		{"blocked prompt", `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":4,"totalTokenCount":4}}`, llm.FinishContentFilter, ""},
		{"reply without finish reason", `{"candidates":[{"content":{"parts":[{"text":"done"}]}}]}`, llm.FinishStop, "done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, reply(http.StatusOK, tt.body))
			resp, err := f.model(t, Config{}).Generate(context.Background(), []schemas.Message{schemas.UserMessage("q")})
			require.NoError(t, err)
			assert.Equal(t, tt.want, resp.FinishReason)
			assert.Equal(t, tt.content, resp.Content)
			assert.Equal(t, DefaultModel, resp.Model, "without modelVersion the configured name is reported")
		})
	}
}

func TestGenerateNoCandidates(t *testing.T) {
	f := newFake(t, reply(http.StatusOK, `{"usageMetadata":{"promptTokenCount":4}}`))
	_, err := f.model(t, Config{}).Generate(context.Background(), []schemas.Message{schemas.UserMessage("q")})
	require.Error(t, err)
	assert.ErrorIs(t, err, llm.ErrUnavailable)
	assert.Contains(t, err.Error(), "no candidates")
}

const toolCallReply = `{
  "candidates": [{
    "content": {"role": "model", "parts": [
      {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2lnLTE="},
      {"functionCall": {"name": "get_weather", "args": {"city": "Zürich", "units": {"temp": "C"}}}},
      {"functionCall": {"id": "fc-3", "name": "now"}}
    ]},
    "finishReason": "STOP"
  }],
  "usageMetadata": {"promptTokenCount": 30, "candidatesTokenCount": 12, "totalTokenCount": 42}
}`

func TestGenerateToolCallsRoundTrip(t *testing.T) {
	f := newFake(t, reply(http.StatusOK, toolCallReply), reply(http.StatusOK, okReply))
	m := f.model(t, Config{})
	question := schemas.UserMessage("Weather in Paris and Zürich, and the time?")
	resp, err := m.Generate(context.Background(), []schemas.Message{question}, llm.Tools(weatherTools()...))
	require.NoError(t, err)

	assert.Equal(t, llm.FinishToolCalls, resp.FinishReason)
	assert.Empty(t, resp.Content)
	require.Len(t, resp.ToolCalls, 3)
	calls := resp.ToolCalls
	assert.Equal(t, "get_weather", calls[0].Name)
	assert.JSONEq(t, `{"city":"Paris"}`, string(calls[0].Arguments))
	assert.Equal(t, []byte("sig-1"), calls[0].Signature)
	assert.JSONEq(t, `{"city":"Zürich","units":{"temp":"C"}}`, string(calls[1].Arguments))
	assert.Nil(t, calls[1].Signature)
	assert.Equal(t, "fc-3", calls[2].ID, "an ID from the API is kept")
	assert.JSONEq(t, `{}`, string(calls[2].Arguments))
	for _, c := range calls[:2] {
		assert.True(t, strings.HasPrefix(c.ID, generatedIDPrefix), "generated ID %q", c.ID)
	}
	assert.NotEqual(t, calls[0].ID, calls[1].ID, "generated IDs are unique")
	assert.Equal(t, llm.Usage{PromptTokens: 30, CompletionTokens: 12, TotalTokens: 42}, resp.Usage)

	// Send the calls and their results back: signatures return with their
	// calls, generated IDs stay on our side.
	msgs := []schemas.Message{
		question,
		{Role: schemas.Assistant, ToolCalls: resp.ToolCalls},
		schemas.ToolResultMessage(calls[0], "18°C"),
		schemas.ToolResultMessage(calls[1], "21°C"),
		schemas.ToolResultMessage(calls[2], "12:00"),
	}
	_, err = m.Generate(context.Background(), msgs, llm.Tools(weatherTools()...))
	require.NoError(t, err)
	reqs := f.requests()
	require.Len(t, reqs, 2)
	assertJSON(t, `[`+
		`{"role":"user","parts":[{"text":"Weather in Paris and Zürich, and the time?"}]},`+
		`{"role":"model","parts":[`+
		`{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2lnLTE="},`+
		`{"functionCall":{"name":"get_weather","args":{"city":"Zürich","units":{"temp":"C"}}}},`+
		`{"functionCall":{"id":"fc-3","name":"now"}}]},`+
		`{"role":"user","parts":[`+
		`{"functionResponse":{"name":"get_weather","response":{"output":"18°C"}}},`+
		`{"functionResponse":{"name":"get_weather","response":{"output":"21°C"}}},`+
		`{"functionResponse":{"id":"fc-3","name":"now","response":{"output":"12:00"}}}]}]`,
		reqs[1].wire(t).Contents, "contents")
}

func TestGenerateRejectsBadRequestsLocally(t *testing.T) {
	user := []schemas.Message{schemas.UserMessage("hi")}
	tests := []struct {
		name string
		msgs []schemas.Message
		opts []llm.Option
		want error
	}{
		{"search with function tools", user, []llm.Option{llm.GoogleSearch(), llm.Tools(weatherTools()...)}, llm.ErrUnsupported},
		{"invalid tool name", user, []llm.Option{llm.Tools(schemas.ToolDef{Name: "9 lives"})}, llm.ErrBadRequest},
		{"duplicate tool", user, []llm.Option{llm.Tools(weatherTools()[1], weatherTools()[1])}, llm.ErrBadRequest},
		{"choice names no tool", user, []llm.Option{llm.Tools(weatherTools()...), llm.WithToolChoice("fly")}, llm.ErrBadRequest},
		{"required without tools", user, []llm.Option{llm.WithToolChoice(llm.ToolRequired)}, llm.ErrBadRequest},
		{"only a system message", []schemas.Message{schemas.SystemMessage("x")}, nil, llm.ErrBadRequest},
		{"no messages", nil, nil, llm.ErrBadRequest},
		{"image in system message", []schemas.Message{{Role: schemas.System, Images: []schemas.Image{{MIMEType: "image/png", Data: []byte{1}}}}, user[0]}, nil, llm.ErrBadRequest},
		{"image without type", []schemas.Message{{Role: schemas.User, Images: []schemas.Image{{Data: []byte{1}}}}}, nil, llm.ErrBadRequest},
		{"tool result for unknown call", []schemas.Message{user[0], {Role: schemas.Tool, ToolCallID: "x", Content: "r"}}, nil, llm.ErrBadRequest},
		{"arguments not an object", []schemas.Message{user[0], {Role: schemas.Assistant, ToolCalls: []schemas.ToolCall{{ID: "1", Name: "now", Arguments: json.RawMessage(`[1]`)}}}}, nil, llm.ErrBadRequest},
		{"call without name", []schemas.Message{user[0], {Role: schemas.Assistant, ToolCalls: []schemas.ToolCall{{ID: "1"}}}}, nil, llm.ErrBadRequest},
		{"unknown role", []schemas.Message{{Role: "robot", Content: "x"}}, nil, llm.ErrBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, reply(http.StatusOK, okReply))
			_, err := f.model(t, Config{}).Generate(context.Background(), tt.msgs, tt.opts...)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.want)
			assert.True(t, strings.HasPrefix(err.Error(), "gemini: "), err.Error())
			assert.Empty(t, f.requests(), "nothing may be sent")
		})
	}
}

func TestGenerateUnsupportedCombinationFromAPI(t *testing.T) {
	schema := &jsonschema.Schema{Type: "object"}
	tests := []struct {
		name            string
		model           string
		opts            []llm.Option
		wantUnsupported bool
	}{
		{"search and schema", "gemini-3-flash-preview", []llm.Option{llm.GoogleSearch(), llm.ResponseSchema("r", schema)}, true},
		{"tools and schema", "gemini-flash-latest", []llm.Option{llm.Tools(weatherTools()...), llm.ResponseSchema("r", schema)}, true},
		{"schema alone", "gemini-3-flash-preview", []llm.Option{llm.ResponseSchema("r", schema)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, reply(http.StatusBadRequest, errorBody(400, "INVALID_ARGUMENT",
				"Unable to submit request because controlled generation is not supported with google_search tool.")))
			_, err := f.model(t, Config{Model: tt.model}).Generate(context.Background(), []schemas.Message{schemas.UserMessage("q")}, tt.opts...)
			require.Error(t, err)
			assert.ErrorIs(t, err, llm.ErrBadRequest)
			assert.Equal(t, tt.wantUnsupported, errors.Is(err, llm.ErrUnsupported), err.Error())
			assert.Contains(t, err.Error(), "controlled generation is not supported")
		})
	}
}

func TestGenerateHTTPErrors(t *testing.T) {
	const invalidKey = `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT",` +
		`"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`
	const quota = `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED",` +
		`"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		retries    int // ClientConfig.MaxRetries
		wantStatus int
		wantIs     error
		wantIn     []string
		wantRetry  time.Duration
		attempts   int
	}{
		{
			name:       "400 is not retried",
			handler:    reply(400, errorBody(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")),
			retries:    3,
			wantStatus: 400, wantIs: llm.ErrBadRequest, attempts: 1,
			wantIn: []string{"gemini: Bad Request (400): Invalid JSON payload received."},
		},
		{
			name:       "401 names the key variable",
			handler:    reply(401, errorBody(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")),
			retries:    3,
			wantStatus: 401, wantIs: llm.ErrAuth, attempts: 1,
			wantIn: []string{"gemini: GEMINI_API_KEY was rejected (401): Request had invalid authentication credentials.", apiKeyURL},
		},
		{
			name:       "invalid key (400 API_KEY_INVALID) is an auth error",
			handler:    reply(400, invalidKey),
			retries:    3,
			wantStatus: 401, wantIs: llm.ErrAuth, attempts: 1,
			wantIn: []string{"GEMINI_API_KEY was rejected (401): API key not valid", "API_KEY_INVALID"},
		},
		{
			name:       "403",
			handler:    reply(403, errorBody(403, "PERMISSION_DENIED", "Permission denied on resource project.")),
			retries:    3,
			wantStatus: 403, wantIs: llm.ErrAuth, attempts: 1,
			wantIn: []string{"GEMINI_API_KEY was rejected (403)"},
		},
		{
			name:       "404 unknown model",
			handler:    reply(404, errorBody(404, "NOT_FOUND", "models/gemini-9 is not found for API version v1beta.")),
			wantStatus: 404, wantIs: llm.ErrBadRequest, attempts: 1,
			wantIn: []string{"is not found"},
		},
		{
			name:       "429 with Retry-After",
			handler:    reply(429, errorBody(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted."), "Retry-After", "7"),
			retries:    -1,
			wantStatus: 429, wantIs: llm.ErrRateLimited, wantRetry: 7 * time.Second, attempts: 1,
			wantIn: []string{"Too Many Requests (429)"},
		},
		{
			name:       "429 with RetryInfo",
			handler:    reply(429, quota),
			retries:    -1,
			wantStatus: 429, wantIs: llm.ErrRateLimited, wantRetry: 37 * time.Second, attempts: 1,
			wantIn: []string{"You exceeded your current quota."},
		},
		{
			name:       "429 after retries",
			handler:    reply(429, errorBody(429, "RESOURCE_EXHAUSTED", "slow down"), "Retry-After", "0.002"),
			retries:    2,
			wantStatus: 429, wantIs: llm.ErrRateLimited, wantRetry: 2 * time.Millisecond, attempts: 3,
		},
		{
			name:       "500",
			handler:    reply(500, errorBody(500, "INTERNAL", "An internal error has occurred.")),
			wantStatus: 500, wantIs: llm.ErrUnavailable, attempts: 1,
			wantIn: []string{"Internal Server Error (500): An internal error has occurred."},
		},
		{
			name:       "503 retried, without multiplying retries",
			handler:    reply(503, errorBody(503, "UNAVAILABLE", "The model is overloaded.")),
			retries:    2,
			wantStatus: 503, wantIs: llm.ErrUnavailable, attempts: 3,
			wantIn: []string{"The model is overloaded."},
		},
		{
			name: "502 with an HTML body",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(502)
				_, _ = w.Write([]byte("<html><body>" + strings.Repeat("Bad gateway. ", 400) + "</body></html>"))
			},
			wantStatus: 502, wantIs: llm.ErrUnavailable, attempts: 1,
			wantIn: []string{"Bad gateway.", "…"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.handler)
			cc := fastClient()
			cc.MaxRetries = tt.retries
			if cc.MaxRetries == 0 {
				cc.MaxRetries = -1
			}
			_, err := f.model(t, Config{Client: cc}).Generate(context.Background(), []schemas.Message{schemas.UserMessage("q")})
			require.Error(t, err)
			var ae *llm.APIError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, "gemini", ae.Provider)
			assert.Equal(t, tt.wantStatus, ae.Status)
			assert.ErrorIs(t, err, tt.wantIs)
			assert.Equal(t, tt.wantRetry, ae.RetryAfter)
			for _, s := range tt.wantIn {
				assert.Contains(t, err.Error(), s)
			}
			assert.LessOrEqual(t, len(ae.Message), maxMessage+len("…"))
			assert.Len(t, f.requests(), tt.attempts)
			noKey(t, err.Error())
		})
	}
}

func TestGenerateSucceedsAfter429(t *testing.T) {
	f := newFake(t,
		reply(429, errorBody(429, "RESOURCE_EXHAUSTED", "slow down"), "Retry-After", "0.001"),
		reply(503, errorBody(503, "UNAVAILABLE", "overloaded")),
		reply(http.StatusOK, okReply))
	cc := fastClient()
	cc.MaxRetries = 3
	resp, err := f.model(t, Config{Client: cc}).Generate(context.Background(), []schemas.Message{schemas.UserMessage("q")})
	require.NoError(t, err)
	assert.Equal(t, "ok", resp.Content)
	reqs := f.requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, reqs[0].Body, reqs[2].Body, "the retried request is the same")
}

func TestGenerateTimeout(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		opts    []llm.Option
	}{
		{"unary", hang, nil},
		{"stream", func(w http.ResponseWriter, r *http.Request) {
			sse(`{"candidates":[{"content":{"parts":[{"text":"Spain"}]}}]}`)(w, r)
			hang(w, r)
		}, []llm.Option{llm.OnDelta(func(llm.Delta) {})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.handler)
			cc := fastClient()
			cc.Timeout = 100 * time.Millisecond
			// The server hangs until the client goes: only the timeout
			// ends the call.
			_, err := f.model(t, Config{Client: cc}).Generate(context.Background(), []schemas.Message{schemas.UserMessage("q")}, tt.opts...)
			require.Error(t, err)
			assert.ErrorIs(t, err, llm.ErrTimeout)
			assert.NotErrorIs(t, err, llm.ErrUnavailable)
			assert.Len(t, f.requests(), 1, "a timeout is not retried")
		})
	}
}

func TestGenerateCancel(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		opts    []llm.Option
	}{
		{"unary", hang, nil},
		{"stream", func(w http.ResponseWriter, r *http.Request) {
			sse(`{"candidates":[{"content":{"parts":[{"text":"Spain"}]}}]}`)(w, r)
			hang(w, r)
		}, []llm.Option{llm.OnDelta(func(llm.Delta) {})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.handler)
			ctx, cancel := context.WithCancel(context.Background())
			timer := time.AfterFunc(50*time.Millisecond, cancel)
			defer timer.Stop()
			// The server hangs until the client goes: only the
			// cancellation ends the call.
			_, err := f.model(t, Config{}).Generate(ctx, []schemas.Message{schemas.UserMessage("q")}, tt.opts...)
			require.Error(t, err)
			assert.ErrorIs(t, err, context.Canceled)
		})
	}
}

func TestGenerateConcurrent(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
			sse(okReply)(w, r)
			return
		}
		reply(http.StatusOK, okReply)(w, r)
	})
	cc := fastClient()
	cc.MaxConcurrency = 2
	m := f.model(t, Config{Client: cc})
	const n = 16
	errs := make(chan error, n)
	for i := range n {
		go func() {
			var opts []llm.Option
			if i%2 == 0 {
				opts = append(opts, llm.OnDelta(func(llm.Delta) {}))
			}
			resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("q")}, opts...)
			if err == nil && resp.Content != "ok" {
				err = fmt.Errorf("content %q", resp.Content)
			}
			errs <- err
		}()
	}
	for range n {
		assert.NoError(t, <-errs)
	}
	assert.Len(t, f.requests(), n)
}

func TestSchemaFallbackIsLogged(t *testing.T) {
	var buf strings.Builder
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f := newFake(t, reply(http.StatusOK, okReply))
	m := f.model(t, Config{Model: "gemini-2.5-pro", Logger: logger})
	schema := &jsonschema.Schema{Type: "object"}
	_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("q")}, llm.GoogleSearch(), llm.ResponseSchema("Answer", schema))
	require.NoError(t, err)
	assert.Contains(t, buf.String(), "response schema sent as instructions")
	assert.Contains(t, buf.String(), "model=gemini-2.5-pro")

	buf.Reset()
	_, err = m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("q")}, llm.ResponseSchema("Answer", schema))
	require.NoError(t, err)
	assert.Empty(t, buf.String(), "a schema without tools is native")
}

// TestNothingPrinted: the provider writes nothing to the standard logger or
// stderr, so the CLI's --quiet holds. Both key variables are set and a
// stream is cut, which made google.golang.org/genai print "Warning: Both
// GOOGLE_API_KEY and GEMINI_API_KEY are set" and "Error unexpected EOF".
func TestNothingPrinted(t *testing.T) {
	var logged strings.Builder
	log.SetOutput(&logged)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		sse(`{"candidates":[{"content":{"parts":[{"text":"Spain"}]}}]}`)(w, r)
		panic(http.ErrAbortHandler)
	})
	t.Setenv(EnvAPIKey, testKey)
	t.Setenv(EnvGoogleAPIKey, "another-key-0123456789")
	t.Setenv(EnvBaseURL, f.srv.URL)
	m, err := NewFromEnv(context.Background(), Config{Client: fastClient()})
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("q")}, llm.OnDelta(func(llm.Delta) {}))
	require.Error(t, err)
	assert.Empty(t, logged.String(), "printed outside slog")
}

// Consecutive user messages are one user content, as one turn; tool results
// stay a content of their own.
func TestConsecutiveUserMessagesAreOneContent(t *testing.T) {
	call := schemas.ToolCall{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{}`)}
	contents, _, err := convertMessages([]schemas.Message{
		schemas.UserMessage("Head."),
		schemas.UserMessage("Finding 1."),
		{Role: schemas.Assistant, ToolCalls: []schemas.ToolCall{call}},
		schemas.ToolResultMessage(call, "result"),
		schemas.UserMessage("State."),
		schemas.UserMessage("Closing."),
	})
	require.NoError(t, err)
	raw, err := json.Marshal(contents)
	require.NoError(t, err)
	assert.JSONEq(t, `[
		{"role":"user","parts":[{"text":"Head."},{"text":"Finding 1."}]},
		{"role":"model","parts":[{"functionCall":{"id":"c1","name":"lookup"}}]},
		{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"lookup","response":{"output":"result"}}}]},
		{"role":"user","parts":[{"text":"State."},{"text":"Closing."}]}
	]`, string(raw))
}
