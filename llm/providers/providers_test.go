package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/gemini"
	"github.com/deepgraph/deepgraph/llm/internal/wiretest"
	"github.com/deepgraph/deepgraph/schemas"
)

const (
	optKey = "opt-key-0123456789abcdef"
	envKey = "env-key-0123456789abcdef"
)

// serve answers each provider's wire protocol by path: Gemini's
// generateContent, OpenAI's chat completions (also Ollama and compatible
// servers) and Anthropic's messages. reject makes it answer 401.
func serve(reject bool) func(w http.ResponseWriter, r *http.Request, _ int) {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1beta/models/") && strings.HasSuffix(r.URL.Path, ":generateContent"):
			if reject {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"error":{"code":401,"message":"API key not valid.","status":"UNAUTHENTICATED"}}`)
				return
			}
			_, _ = io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"pong"}]},"finishReason":"STOP"}],
				"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1,"totalTokenCount":4},"modelVersion":"gemini-2.5-flash"}`)
		case r.URL.Path == "/v1/chat/completions":
			if reject {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`)
				return
			}
			_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,
				"message":{"role":"assistant","content":"pong"},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
		case r.URL.Path == "/v1/messages":
			if reject {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
				return
			}
			_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
				"content":[{"type":"text","text":"pong"}],"stop_reason":"end_turn",
				"usage":{"input_tokens":3,"output_tokens":1}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":{"message":"no route"}}`)
		}
	}
}

func newFakeServer(t *testing.T) *wiretest.Server { return wiretest.NewServer(t, serve(false)) }

// hostPort is the server's address without a scheme, as OLLAMA_HOST takes it.
func hostPort(t *testing.T, f *wiretest.Server) string {
	t.Helper()
	u, err := url.Parse(f.URL)
	require.NoError(t, err)
	return u.Host
}

// envOf is a Getenv reading only vars.
func envOf(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// testClient is fast and retries nothing, so a rejected request is seen once.
func testClient(f *wiretest.Server) llm.ClientConfig {
	return llm.ClientConfig{HTTPClient: f.Client(), MaxRetries: -1, Timeout: 10 * time.Second}
}

// poisonOSEnv sets the real environment to values that must never be used:
// Open reads only the injected Getenv.
func poisonOSEnv(t *testing.T) {
	for _, name := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "OPENAI_API_KEY",
		"OPENAI_BASE_URL", "OPENAI_ORGANIZATION", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OLLAMA_HOST"} {
		t.Setenv(name, "poison-from-os-environment")
	}
}

func TestOpenRoundTrip(t *testing.T) {
	poisonOSEnv(t)
	type setup struct {
		opts Options
		vars map[string]string
	}
	tests := []struct {
		name     string
		spec     string
		setup    func(f *wiretest.Server) setup
		wantPath string
		// wantAuth maps headers to their expected value; "" means absent.
		wantAuth map[string]string
		wantName string
	}{
		{
			name: "gemini, key from options",
			spec: "gemini:gemini-2.5-flash",
			setup: func(f *wiretest.Server) setup {
				return setup{opts: Options{GeminiAPIKey: optKey, GeminiBaseURL: f.URL}, vars: map[string]string{"GEMINI_API_KEY": envKey}}
			},
			wantPath: "/v1beta/models/gemini-2.5-flash:generateContent",
			wantAuth: map[string]string{"X-Goog-Api-Key": optKey},
			wantName: "gemini-2.5-flash",
		},
		{
			name: "gemini, key and endpoint from the environment",
			spec: "google:gemini-2.5-pro",
			setup: func(f *wiretest.Server) setup {
				return setup{vars: map[string]string{"GEMINI_API_KEY": envKey, "GOOGLE_API_KEY": "other", "GOOGLE_GEMINI_BASE_URL": f.URL}}
			},
			wantPath: "/v1beta/models/gemini-2.5-pro:generateContent",
			wantAuth: map[string]string{"X-Goog-Api-Key": envKey},
			wantName: "gemini-2.5-pro",
		},
		{
			name: "gemini, GOOGLE_API_KEY when GEMINI_API_KEY is unset",
			spec: "gemini:gemini-2.5-flash",
			setup: func(f *wiretest.Server) setup {
				return setup{opts: Options{GeminiBaseURL: f.URL}, vars: map[string]string{"GEMINI_API_KEY": "  ", "GOOGLE_API_KEY": envKey}}
			},
			wantPath: "/v1beta/models/gemini-2.5-flash:generateContent",
			wantAuth: map[string]string{"X-Goog-Api-Key": envKey},
			wantName: "gemini-2.5-flash",
		},
		{
			name: "openai, key from options",
			spec: "openai:gpt-4.1-mini",
			setup: func(f *wiretest.Server) setup {
				return setup{opts: Options{OpenAIAPIKey: optKey, OpenAIBaseURL: f.URL + "/v1"}, vars: map[string]string{"OPENAI_API_KEY": envKey}}
			},
			wantPath: "/v1/chat/completions",
			wantAuth: map[string]string{"Authorization": "Bearer " + optKey},
			wantName: "gpt-4.1-mini",
		},
		{
			name: "openai, key and base URL from the environment",
			spec: "openai:gpt-4.1",
			setup: func(f *wiretest.Server) setup {
				return setup{vars: map[string]string{"OPENAI_API_KEY": envKey, "OPENAI_BASE_URL": f.URL + "/v1"}}
			},
			wantPath: "/v1/chat/completions",
			wantAuth: map[string]string{"Authorization": "Bearer " + envKey},
			wantName: "gpt-4.1",
		},
		{
			name: "anthropic, key from options",
			spec: "anthropic:claude-sonnet-4-5",
			setup: func(f *wiretest.Server) setup {
				return setup{opts: Options{AnthropicAPIKey: optKey, AnthropicBaseURL: f.URL}, vars: map[string]string{"ANTHROPIC_API_KEY": envKey}}
			},
			wantPath: "/v1/messages",
			wantAuth: map[string]string{"X-Api-Key": optKey, "Anthropic-Version": "2023-06-01"},
			wantName: "claude-sonnet-4-5",
		},
		{
			name: "anthropic, key and base URL from the environment",
			spec: "claude:claude-haiku-4-5",
			setup: func(f *wiretest.Server) setup {
				return setup{vars: map[string]string{"ANTHROPIC_API_KEY": envKey, "ANTHROPIC_BASE_URL": f.URL}}
			},
			wantPath: "/v1/messages",
			wantAuth: map[string]string{"X-Api-Key": envKey},
			wantName: "claude-haiku-4-5",
		},
		{
			name: "ollama, OLLAMA_HOST as host:port, no key sent",
			spec: "ollama:qwen3:8b",
			setup: func(f *wiretest.Server) setup {
				return setup{vars: map[string]string{"OLLAMA_HOST": hostPort(t, f), "OPENAI_API_KEY": envKey}}
			},
			wantPath: "/v1/chat/completions",
			wantAuth: map[string]string{"Authorization": ""},
			wantName: "qwen3:8b",
		},
		{
			name: "ollama, host from options wins",
			spec: "ollama:llama3.1",
			setup: func(f *wiretest.Server) setup {
				return setup{opts: Options{OllamaHost: f.URL, OpenAIAPIKey: optKey}, vars: map[string]string{"OLLAMA_HOST": "http://127.0.0.1:1"}}
			},
			wantPath: "/v1/chat/completions",
			wantAuth: map[string]string{"Authorization": ""},
			wantName: "llama3.1",
		},
		{
			name: "compatible, base URL and key from options",
			spec: "compatible:deepseek-chat",
			setup: func(f *wiretest.Server) setup {
				return setup{opts: Options{OpenAIBaseURL: f.URL + "/v1", OpenAIAPIKey: optKey}}
			},
			wantPath: "/v1/chat/completions",
			wantAuth: map[string]string{"Authorization": "Bearer " + optKey},
			wantName: "deepseek-chat",
		},
		{
			name: "compatible, keyless server from the environment",
			spec: "openai-compatible:Qwen/Qwen3-8B",
			setup: func(f *wiretest.Server) setup {
				return setup{vars: map[string]string{"OPENAI_BASE_URL": f.URL + "/v1/"}}
			},
			wantPath: "/v1/chat/completions",
			wantAuth: map[string]string{"Authorization": ""},
			wantName: "Qwen/Qwen3-8B",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeServer(t)
			s := tt.setup(f)
			s.opts.Getenv = envOf(s.vars)
			s.opts.Client = testClient(f)
			m, err := Open(context.Background(), tt.spec, s.opts)
			require.NoError(t, err)
			named, ok := m.(interface{ Name() string })
			require.True(t, ok, "%T has no Name method", m)
			assert.Equal(t, tt.wantName, named.Name())
			resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("ping")})
			require.NoError(t, err)
			assert.Equal(t, "pong", resp.Content)
			assert.Equal(t, 4, resp.Usage.TotalTokens)
			req := f.Only(t)
			assert.Equal(t, tt.wantPath, req.Path)
			for h, want := range tt.wantAuth {
				assert.Equal(t, want, req.Header.Get(h), h)
			}
			if model, ok := req.Body["model"]; ok {
				assert.Equal(t, tt.wantName, model, "the model named in the body")
			}
		})
	}
	// Every provider llm.ParseSpec accepts has a round trip above.
	var covered []string
	for _, tt := range tests {
		p, _, err := llm.ParseSpec(tt.spec)
		require.NoError(t, err)
		covered = append(covered, p)
	}
	for _, p := range llm.Providers() {
		assert.Contains(t, covered, p)
	}
}

func TestOpenMissingSettings(t *testing.T) {
	poisonOSEnv(t)
	tests := []struct {
		name string
		spec string
		opts Options
		is   []error
		// mention lists what the message must name.
		mention []string
	}{
		{
			name: "gemini without a key", spec: "gemini:gemini-2.5-flash",
			is:      []error{llm.ErrAuth, gemini.ErrNoAPIKey},
			mention: []string{"gemini:gemini-2.5-flash", "GEMINI_API_KEY", "GOOGLE_API_KEY", "gemini_api_key", "https://aistudio.google.com/apikey"},
		},
		{
			name: "openai without a key", spec: "openai:gpt-4.1-mini",
			is:      []error{llm.ErrAuth},
			mention: []string{"openai:gpt-4.1-mini", "OPENAI_API_KEY", "openai_api_key", "OPENAI_BASE_URL", "compatible:", "OLLAMA_HOST", "ollama:"},
		},
		{
			name: "openai pointed at api.openai.com explicitly, without a key", spec: "openai:gpt-4.1-mini",
			opts:    Options{OpenAIBaseURL: "https://API.openai.com/v1"},
			is:      []error{llm.ErrAuth},
			mention: []string{"OPENAI_API_KEY"},
		},
		{
			name: "anthropic without a key", spec: "anthropic:claude-sonnet-4-5",
			is:      []error{llm.ErrAuth},
			mention: []string{"anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY", "anthropic_api_key", "console.anthropic.com"},
		},
		{
			name: "compatible without a base URL", spec: "compatible:local",
			opts:    Options{OpenAIAPIKey: optKey},
			is:      []error{llm.ErrNoModel},
			mention: []string{"compatible:local", "OPENAI_BASE_URL", "openai_base_url", "http://localhost:8000/v1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Getenv = envOf(nil)
			m, err := Open(context.Background(), tt.spec, tt.opts)
			require.Error(t, err)
			assert.Nil(t, m)
			for _, target := range tt.is {
				assert.ErrorIs(t, err, target)
			}
			for _, s := range tt.mention {
				assert.Contains(t, err.Error(), s)
			}
			assert.NotContains(t, err.Error(), optKey)
			assert.NotContains(t, err.Error(), "poison")
		})
	}
}

// A gateway or local server in front of Anthropic or OpenAI may need no key.
func TestOpenKeylessGateways(t *testing.T) {
	f := newFakeServer(t)
	for _, spec := range []string{"openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-5"} {
		m, err := Open(context.Background(), spec, Options{
			OpenAIBaseURL: f.URL + "/v1", AnthropicBaseURL: f.URL, Getenv: envOf(nil), Client: testClient(f),
		})
		require.NoError(t, err, spec)
		_, err = m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("ping")})
		require.NoError(t, err, spec)
	}
	reqs := f.Requests()
	require.Len(t, reqs, 2)
	assert.Empty(t, reqs[0].Header.Get("Authorization"))
	assert.Empty(t, reqs[1].Header.Get("X-Api-Key"))
}

func TestOpenBadSpecs(t *testing.T) {
	tests := []struct {
		spec string
		is   []error
	}{
		{"", []error{llm.ErrInvalidSpec, llm.ErrNoModel}},
		{"   ", []error{llm.ErrInvalidSpec, llm.ErrNoModel}},
		{"gpt-4.1-mini", []error{llm.ErrInvalidSpec}},
		{"mistral:large", []error{llm.ErrInvalidSpec}},
		{"openai:", []error{llm.ErrInvalidSpec}},
	}
	for _, tt := range tests {
		_, err := Open(context.Background(), tt.spec, Options{Getenv: envOf(map[string]string{"OPENAI_API_KEY": envKey})})
		require.Error(t, err, tt.spec)
		for _, target := range tt.is {
			assert.ErrorIs(t, err, target, tt.spec)
		}
	}
}

func TestOpenBadSettings(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		opts    Options
		vars    map[string]string
		mention []string
	}{
		{name: "ollama host from the config", spec: "ollama:qwen3:8b", opts: Options{OllamaHost: "ftp://box"},
			mention: []string{"ollama_host", "http or https"}},
		{name: "ollama host from the environment", spec: "ollama:qwen3:8b", vars: map[string]string{"OLLAMA_HOST": "box:99999"},
			mention: []string{"OLLAMA_HOST", "99999"}},
		{name: "compatible base URL", spec: "compatible:m", opts: Options{OpenAIBaseURL: "localhost:8000/v1"},
			mention: []string{"compatible", "localhost:8000/v1", "not an http(s) URL"}},
		{name: "anthropic base URL", spec: "anthropic:claude-sonnet-4-5", vars: map[string]string{"ANTHROPIC_API_KEY": envKey, "ANTHROPIC_BASE_URL": "gateway"},
			mention: []string{"anthropic", "gateway"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Getenv = envOf(tt.vars)
			_, err := Open(context.Background(), tt.spec, tt.opts)
			require.Error(t, err)
			for _, s := range tt.mention {
				assert.Contains(t, err.Error(), s)
			}
			assert.NotContains(t, err.Error(), envKey)
		})
	}
}

// A rejected key is reported under the name it came from, never by value.
func TestOpenRejectedKeyNamesItsSource(t *testing.T) {
	tests := []struct {
		spec string
		opts func(f *wiretest.Server) Options
		want string
	}{
		{"gemini:gemini-2.5-flash", func(f *wiretest.Server) Options {
			return Options{GeminiBaseURL: f.URL, Getenv: envOf(map[string]string{"GOOGLE_API_KEY": envKey})}
		}, "GOOGLE_API_KEY"},
		{"gemini:gemini-2.5-flash", func(f *wiretest.Server) Options {
			return Options{GeminiBaseURL: f.URL, GeminiAPIKey: optKey, Getenv: envOf(nil)}
		}, "gemini_api_key"},
		{"openai:gpt-4.1-mini", func(f *wiretest.Server) Options {
			return Options{OpenAIBaseURL: f.URL + "/v1", Getenv: envOf(map[string]string{"OPENAI_API_KEY": envKey})}
		}, "OPENAI_API_KEY"},
		{"compatible:m", func(f *wiretest.Server) Options {
			return Options{OpenAIBaseURL: f.URL + "/v1", OpenAIAPIKey: optKey, Getenv: envOf(nil)}
		}, "openai_api_key"},
		{"anthropic:claude-sonnet-4-5", func(f *wiretest.Server) Options {
			return Options{AnthropicBaseURL: f.URL, AnthropicAPIKey: optKey, Getenv: envOf(nil)}
		}, "anthropic_api_key"},
	}
	for _, tt := range tests {
		t.Run(tt.spec+" "+tt.want, func(t *testing.T) {
			f := wiretest.NewServer(t, serve(true))
			opts := tt.opts(f)
			opts.Client = testClient(f)
			m, err := Open(context.Background(), tt.spec, opts)
			require.NoError(t, err)
			_, err = m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("ping")})
			require.Error(t, err)
			assert.ErrorIs(t, err, llm.ErrAuth)
			assert.Contains(t, err.Error(), tt.want+" was rejected")
			assert.NotContains(t, err.Error(), optKey)
			assert.NotContains(t, err.Error(), envKey)
		})
	}
}

func TestOpenLogs(t *testing.T) {
	f := newFakeServer(t)
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, err := Open(context.Background(), "openai:gpt-4.1-mini", Options{
		OpenAIBaseURL: strings.Replace(f.URL, "http://", "http://user:secret@", 1) + "/v1?token=secret",
		Getenv:        envOf(map[string]string{"OPENAI_API_KEY": envKey}),
		Logger:        logger,
	})
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &rec), buf.String())
	assert.Equal(t, "llm model opened", rec["msg"])
	assert.Equal(t, "openai", rec["provider"])
	assert.Equal(t, "gpt-4.1-mini", rec["model"])
	assert.Equal(t, "OPENAI_API_KEY", rec["key_from"])
	assert.Equal(t, f.URL+"/v1", rec["server"])
	assert.NotContains(t, buf.String(), envKey)
	assert.NotContains(t, buf.String(), "secret")
}

func TestDefault(t *testing.T) {
	tests := []struct {
		name   string
		opts   Options
		vars   map[string]string
		want   string
		wantOK bool
	}{
		{name: "nothing configured", wantOK: false},
		{name: "Gemini first", vars: map[string]string{"GEMINI_API_KEY": "g", "OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a", "OLLAMA_HOST": "h"},
			want: "gemini:gemini-2.5-flash", wantOK: true},
		{name: "GOOGLE_API_KEY counts as a Gemini key", vars: map[string]string{"GOOGLE_API_KEY": "g", "OPENAI_API_KEY": "o"},
			want: "gemini:gemini-2.5-flash", wantOK: true},
		{name: "a Gemini key from the config", opts: Options{GeminiAPIKey: "g"}, vars: map[string]string{"OPENAI_API_KEY": "o"},
			want: "gemini:gemini-2.5-flash", wantOK: true},
		{name: "OpenAI second", vars: map[string]string{"OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a", "OLLAMA_HOST": "h"},
			want: "openai:gpt-4.1-mini", wantOK: true},
		{name: "an OpenAI key from the config", opts: Options{OpenAIAPIKey: "o"}, vars: map[string]string{"ANTHROPIC_API_KEY": "a"},
			want: "openai:gpt-4.1-mini", wantOK: true},
		{name: "Anthropic third", vars: map[string]string{"ANTHROPIC_API_KEY": "a", "OLLAMA_HOST": "h"},
			want: "anthropic:claude-sonnet-4-5", wantOK: true},
		{name: "an Anthropic key from the config", opts: Options{AnthropicAPIKey: "a"},
			want: "anthropic:claude-sonnet-4-5", wantOK: true},
		{name: "Ollama only when OLLAMA_HOST is set", vars: map[string]string{"OLLAMA_HOST": "localhost:11434"},
			want: "ollama:qwen3:8b", wantOK: true},
		{name: "Ollama host from the config", opts: Options{OllamaHost: "box:11434"},
			want: "ollama:qwen3:8b", wantOK: true},
		{name: "blank values do not count", opts: Options{GeminiAPIKey: " "}, vars: map[string]string{"GEMINI_API_KEY": "  ", "OPENAI_API_KEY": "\t", "OLLAMA_HOST": " "},
			wantOK: false},
		{name: "a base URL alone names no model", opts: Options{OpenAIBaseURL: "http://localhost:8000/v1"}, vars: map[string]string{"OPENAI_BASE_URL": "http://x/v1"},
			wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Getenv = envOf(tt.vars)
			spec, ok := Default(tt.opts)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, spec)
			if ok {
				_, _, err := llm.ParseSpec(spec)
				assert.NoError(t, err, "Default returns a valid spec")
			}
		})
	}
}

// Default reads the real environment only when no Getenv is given.
func TestDefaultReadsTheEnvironmentByDefault(t *testing.T) {
	for _, name := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "OLLAMA_HOST"} {
		t.Setenv(name, "")
	}
	t.Setenv("ANTHROPIC_API_KEY", "from-os")
	spec, ok := Default(Options{})
	assert.True(t, ok)
	assert.Equal(t, "anthropic:claude-sonnet-4-5", spec)
	_, ok = Default(Options{Getenv: envOf(nil)})
	assert.False(t, ok)
}

func TestHowToConfigure(t *testing.T) {
	text := HowToConfigure()
	for _, s := range []string{
		"GEMINI_API_KEY", "https://aistudio.google.com/apikey", "OPENAI_API_KEY", "OPENAI_BASE_URL",
		"vLLM", "LM Studio", "OpenRouter", "DeepSeek", "ANTHROPIC_API_KEY", "OLLAMA_HOST", "ollama:qwen3:8b",
		"compatible:<model>", "--model", "config file",
		ConfigGeminiAPIKey, ConfigOpenAIAPIKey, ConfigOpenAIBaseURL, ConfigAnthropicAPIKey, ConfigOllamaHost,
	} {
		assert.Contains(t, text, s)
	}
	for _, p := range llm.Providers() {
		assert.Contains(t, text, p)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	assert.True(t, slices.IndexFunc(lines, func(l string) bool { return len([]rune(l)) > 80 }) < 0, "a line is over 80 columns")
	assert.True(t, strings.HasSuffix(text, "\n"))
}

func TestSetupErrorUnwrap(t *testing.T) {
	err := &setupError{msg: "m", errs: []error{llm.ErrAuth, llm.ErrNoModel}}
	assert.True(t, errors.Is(err, llm.ErrNoModel))
	assert.False(t, errors.Is(err, llm.ErrRateLimited))
	assert.Equal(t, "m", err.Error())
}
