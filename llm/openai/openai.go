package openai

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/sdkwire"
	"github.com/deepgraph/deepgraph/schemas"
)

// Defaults and the environment variables New and NewOllama read.
const (
	DefaultModel   = "gpt-4.1-mini"
	DefaultBaseURL = "https://api.openai.com/v1"

	EnvAPIKey     = "OPENAI_API_KEY"
	EnvBaseURL    = "OPENAI_BASE_URL"
	EnvOllamaHost = "OLLAMA_HOST"

	// DefaultOllamaHost is where NewOllama looks when OLLAMA_HOST is unset.
	DefaultOllamaHost = "http://localhost:11434"
)

// SchemaMode says how a call with a response schema (llm.ResponseSchema,
// llm.Structured) asks the server for structured output.
type SchemaMode string

// Schema modes. Servers differ: OpenAI, Ollama, vLLM, llama.cpp server and LM
// Studio accept json_schema; DeepSeek only json_object; some small servers
// neither.
const (
	// SchemaNative sends response_format {type: "json_schema"} with the full
	// schema, strict when the schema meets OpenAI's strict-mode rules. The
	// default.
	SchemaNative SchemaMode = "json_schema"
	// SchemaJSONObject sends response_format {type: "json_object"} and puts
	// the schema into the system prompt (llm.SchemaInstructions).
	SchemaJSONObject SchemaMode = "json_object"
	// SchemaPrompt only puts the schema into the system prompt.
	SchemaPrompt SchemaMode = "prompt"
)

// TokenField is the request field that carries llm.MaxTokens.
type TokenField string

// Token fields. OpenAI deprecated max_tokens in favour of
// max_completion_tokens (and rejects max_tokens for reasoning models); most
// compatible servers only know max_tokens.
const (
	// TokenFieldAuto uses max_completion_tokens for api.openai.com and
	// max_tokens for every other server. The default.
	TokenFieldAuto                TokenField = ""
	TokenFieldMaxCompletionTokens TokenField = "max_completion_tokens"
	TokenFieldMaxTokens           TokenField = "max_tokens"
)

// PromptCacheKeyMode says when prompt_cache_key is sent.
type PromptCacheKeyMode string

// Prompt cache key modes.
const (
	// PromptCacheKeyAuto sends prompt_cache_key to api.openai.com only. The
	// default.
	PromptCacheKeyAuto PromptCacheKeyMode = ""
	PromptCacheKeyOn   PromptCacheKeyMode = "on"
	PromptCacheKeyOff  PromptCacheKeyMode = "off"
)

// Config configures a Model. The zero value talks to OpenAI with the key
// from OPENAI_API_KEY.
type Config struct {
	// Model is the model name; "" means DefaultModel (New) — NewOllama
	// requires it.
	Model string
	// APIKey is sent as "Authorization: Bearer …". "" means the value of
	// OPENAI_API_KEY (New only). A key is required for api.openai.com; other
	// servers are called without an Authorization header when there is none.
	APIKey string
	// KeyEnv names the variable the key came from, for error messages. When
	// New reads OPENAI_API_KEY itself it sets this.
	KeyEnv string
	// BaseURL is the API root that "/chat/completions" is appended to, e.g.
	// http://localhost:8000/v1 for vLLM. "" means OPENAI_BASE_URL, then
	// DefaultBaseURL (New), or OLLAMA_HOST + "/v1" (NewOllama).
	BaseURL string
	// Organization is sent as the OpenAI-Organization header when set.
	Organization string
	// Provider names the server in errors ("openai", "ollama", "vllm",
	// "deepseek", …). "" means "openai" (New) or "ollama" (NewOllama).
	Provider string
	// Client is the transport behaviour: retries, concurrency bound,
	// per-call timeout.
	Client llm.ClientConfig
	// SchemaMode is how structured output is requested; "" means
	// SchemaNative.
	SchemaMode SchemaMode
	// TokenField is the field that carries the reply-length cap.
	TokenField TokenField
	// NoStreamUsage stops sending stream_options.include_usage with streamed
	// calls, for servers that reject it. Streamed replies then carry no
	// usage.
	NoStreamUsage bool
	// PromptCacheKey says whether calls marked llm.CachePrompt carry a
	// prompt_cache_key; "" sends it to api.openai.com only, since other
	// servers may reject the field.
	PromptCacheKey PromptCacheKeyMode
	// Header holds extra request headers, e.g. OpenRouter's HTTP-Referer and
	// X-Title. Authorization cannot be set here.
	Header http.Header
	// Getenv reads environment variables; nil means os.Getenv.
	Getenv func(string) string
}

// Model is an llm.Model for the OpenAI Chat Completions API and the servers
// that speak it. It is safe for concurrent use.
type Model struct {
	client     openai.Client
	provider   string
	model      string
	apiKey     string
	keyEnv     string
	schemaMode SchemaMode
	maxTokens  bool // send max_tokens instead of max_completion_tokens
	noUsage    bool
	cacheKey   bool // send prompt_cache_key with llm.CachePrompt calls
	config     llm.ClientConfig
}

var _ llm.Model = (*Model)(nil)

// New returns a Model for OpenAI or an OpenAI-compatible server, filling
// unset fields from OPENAI_API_KEY and OPENAI_BASE_URL.
func New(cfg Config) (*Model, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if cfg.Provider == "" {
		cfg.Provider = "openai"
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.APIKey == "" {
		if k := strings.TrimSpace(getenv(EnvAPIKey)); k != "" {
			cfg.APIKey = k
			cfg.KeyEnv = EnvAPIKey
		}
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = strings.TrimSpace(getenv(EnvBaseURL))
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	return newModel(cfg)
}

// NewOllama returns a Model for Ollama through its OpenAI-compatible /v1
// endpoint. The server is
// cfg.BaseURL if set, else OLLAMA_HOST (see OllamaBaseURL). No key is needed;
// OPENAI_API_KEY is deliberately not read, so it never goes to another host.
// Model is required: Ollama serves whatever models were pulled.
func NewOllama(cfg Config) (*Model, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if cfg.Provider == "" {
		cfg.Provider = "ollama"
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("%s: %w: name a pulled model (for example llama3.1 or qwen3); `ollama list` shows them", cfg.Provider, llm.ErrNoModel)
	}
	if cfg.BaseURL == "" {
		u, err := OllamaBaseURL(getenv(EnvOllamaHost))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Provider, err)
		}
		cfg.BaseURL = u
	}
	return newModel(cfg)
}

// OllamaBaseURL turns an OLLAMA_HOST value into the base URL of Ollama's
// OpenAI-compatible API. It accepts what Ollama accepts: "" (localhost:11434),
// "host", "host:port", ":port", or a URL with scheme and optional path. A
// missing port is 11434 without a scheme, else the scheme's default. The
// bind-all addresses 0.0.0.0 and :: mean the local machine.
func OllamaBaseURL(host string) (string, error) {
	host = strings.TrimSpace(host)
	if host == "" {
		host = DefaultOllamaHost
	}
	scheme, rest, found := strings.Cut(host, "://")
	port := "11434"
	switch {
	case !found:
		scheme, rest = "http", host
	case strings.EqualFold(scheme, "http"):
		scheme, port = "http", "80"
	case strings.EqualFold(scheme, "https"):
		scheme, port = "https", "443"
	default:
		return "", fmt.Errorf("%s=%q: the scheme must be http or https", EnvOllamaHost, host)
	}
	hostport, path, _ := strings.Cut(rest, "/")
	h, p, err := net.SplitHostPort(hostport)
	if err != nil {
		// No port (or a bare IPv6 address).
		h, p = strings.Trim(hostport, "[]"), port
	}
	if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
		return "", fmt.Errorf("%s=%q: %q is not a port number", EnvOllamaHost, host, p)
	}
	switch h {
	case "", "0.0.0.0", "::":
		h = "localhost"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(h, p)}
	if path = strings.Trim(path, "/"); path != "" {
		u.Path = "/" + path
	}
	return strings.TrimSuffix(u.String(), "/") + "/v1", nil
}

func newModel(cfg Config) (*Model, error) {
	base, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("%s: base URL %q is not an http(s) URL; set %s or the config's base URL to the API root, e.g. http://localhost:8000/v1",
			cfg.Provider, cfg.BaseURL, EnvBaseURL)
	}
	official := strings.EqualFold(base.Hostname(), "api.openai.com")
	if cfg.APIKey == "" && official {
		return nil, fmt.Errorf("%s: no API key for %s: set %s, or point %s at an OpenAI-compatible server "+
			"(vLLM, llama.cpp, LM Studio, OpenRouter, DeepSeek), or use Ollama (%s, default %s): %w",
			cfg.Provider, base.Host, EnvAPIKey, EnvBaseURL, EnvOllamaHost, DefaultOllamaHost, llm.ErrAuth)
	}
	switch cfg.SchemaMode {
	case "":
		cfg.SchemaMode = SchemaNative
	case SchemaNative, SchemaJSONObject, SchemaPrompt:
	default:
		return nil, fmt.Errorf("%s: unknown schema mode %q (want %q, %q or %q)", cfg.Provider, cfg.SchemaMode, SchemaNative, SchemaJSONObject, SchemaPrompt)
	}
	var legacyTokens bool
	switch cfg.TokenField {
	case TokenFieldAuto:
		legacyTokens = !official
	case TokenFieldMaxTokens:
		legacyTokens = true
	case TokenFieldMaxCompletionTokens:
	default:
		return nil, fmt.Errorf("%s: unknown token field %q (want %q or %q)", cfg.Provider, cfg.TokenField, TokenFieldMaxTokens, TokenFieldMaxCompletionTokens)
	}

	cache := official
	switch cfg.PromptCacheKey {
	case PromptCacheKeyAuto:
	case PromptCacheKeyOn:
		cache = true
	case PromptCacheKeyOff:
		cache = false
	default:
		return nil, fmt.Errorf("%s: unknown prompt cache key setting %q (want %q or %q)", cfg.Provider, cfg.PromptCacheKey, PromptCacheKeyOn, PromptCacheKeyOff)
	}

	m := &Model{
		provider:   cfg.Provider,
		model:      cfg.Model,
		apiKey:     cfg.APIKey,
		keyEnv:     cfg.KeyEnv,
		schemaMode: cfg.SchemaMode,
		maxTokens:  legacyTokens,
		noUsage:    cfg.NoStreamUsage,
		cacheKey:   cache,
		config:     cfg.Client,
	}
	headers := sdkwire.Middleware(sdkwire.Headers{KeyHeader: "Authorization", Keyless: cfg.APIKey == "", Extra: cfg.Header.Clone()})
	opts := []option.RequestOption{
		option.WithBaseURL(base.String() + "/"),
		option.WithAPIKey(cfg.APIKey),
		option.WithHTTPClient(cfg.Client.Client()),
		// llm.CallModel is the one retry loop; the SDK must not retry on
		// top of it.
		option.WithMaxRetries(0),
		// The SDK reads OPENAI_ORG_ID and OPENAI_PROJECT_ID itself; only what
		// Config says is sent.
		option.WithHeaderDel("OpenAI-Organization"),
		option.WithHeaderDel("OpenAI-Project"),
		option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			return headers(req, next)
		}),
	}
	if cfg.Organization != "" {
		opts = append(opts, option.WithOrganization(cfg.Organization))
	}
	m.client = openai.NewClient(opts...)
	return m, nil
}

// Name returns the configured model name.
func (m *Model) Name() string { return m.model }

// Provider returns the provider name used in errors.
func (m *Model) Provider() string { return m.provider }

// Generate sends the conversation to /chat/completions. With llm.OnDelta it
// streams; tool calls, reasoning and usage are assembled the same way either
// way. Errors are *llm.APIError values matching the llm sentinels.
func (m *Model) Generate(ctx context.Context, msgs []schemas.Message, opts ...llm.Option) (*llm.Response, error) {
	req := llm.NewRequest(opts...)
	if req.GoogleSearch {
		return nil, fmt.Errorf("%s: Google Search grounding: %w (use the gemini provider)", m.provider, llm.ErrUnsupported)
	}
	p, err := m.prepare(msgs, req)
	if err != nil {
		return nil, err
	}
	return llm.CallModel(ctx, m.config, m.provider, req.OnDelta, func(ctx context.Context, onDelta func(llm.Delta)) (*llm.Response, error) {
		var (
			resp *llm.Response
			err  error
		)
		if req.OnDelta != nil {
			resp, err = m.stream(ctx, p, onDelta)
		} else {
			resp, err = m.complete(ctx, p)
		}
		if err != nil {
			return nil, m.source().Failure(ctx, err)
		}
		return resp, nil
	})
}

// source names the model and its key in errors.
func (m *Model) source() sdkwire.Source {
	return sdkwire.Source{Provider: m.provider, APIKey: m.apiKey, KeyEnv: m.keyEnv, EnvAPIKey: EnvAPIKey, Decode: decodeError}
}
