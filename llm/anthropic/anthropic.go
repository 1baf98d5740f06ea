package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/sdkwire"
	"github.com/deepgraph/deepgraph/schemas"
)

// Defaults and the environment variables New reads.
const (
	DefaultModel     = "claude-sonnet-4-5"
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultMaxTokens = 8192

	EnvAPIKey  = "ANTHROPIC_API_KEY"
	EnvBaseURL = "ANTHROPIC_BASE_URL"

	// APIVersion is the anthropic-version header sent: the Messages API
	// version whose request and event shapes the package uses (the SDK
	// would send its own, newer one, which drops temperature).
	APIVersion = "2023-06-01"
)

// Config configures a Model. The zero value talks to Anthropic with the key
// from ANTHROPIC_API_KEY.
type Config struct {
	// Model is the model name; "" means DefaultModel.
	Model string
	// APIKey is sent as the x-api-key header. "" means the value of
	// ANTHROPIC_API_KEY. A key is required for api.anthropic.com; other
	// servers (proxies, gateways) are called without one when there is none.
	APIKey string
	// KeyEnv names the variable the key came from, for error messages. When
	// New reads ANTHROPIC_API_KEY itself it sets this.
	KeyEnv string
	// BaseURL is the API root, as in Anthropic's SDKs: "/v1/messages" is
	// appended ("/messages" if it already ends in /v1). "" means
	// ANTHROPIC_BASE_URL, then DefaultBaseURL.
	BaseURL string
	// MaxTokens caps replies when the call does not (Anthropic requires a
	// cap); 0 means DefaultMaxTokens.
	MaxTokens int
	// Provider names the server in errors; "" means "anthropic".
	Provider string
	// Client is the transport behaviour: retries, concurrency bound,
	// per-call timeout.
	Client llm.ClientConfig
	// Header holds extra request headers, e.g. anthropic-beta. x-api-key
	// cannot be set here.
	Header http.Header
	// Getenv reads environment variables; nil means os.Getenv.
	Getenv func(string) string
}

// Model is an llm.Model for Anthropic's Messages API. It is safe for
// concurrent use.
type Model struct {
	client    anthropic.Client
	provider  string
	model     string
	apiKey    string
	keyEnv    string
	maxTokens int
	config    llm.ClientConfig
}

var _ llm.Model = (*Model)(nil)

// New returns a Model, filling unset fields from ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL.
func New(cfg Config) (*Model, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if cfg.Provider == "" {
		cfg.Provider = "anthropic"
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("%s: MaxTokens %d is negative", cfg.Provider, cfg.MaxTokens)
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = DefaultMaxTokens
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
	base, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("%s: base URL %q is not an http(s) URL; set %s or the config's base URL, e.g. %s",
			cfg.Provider, cfg.BaseURL, EnvBaseURL, DefaultBaseURL)
	}
	if cfg.APIKey == "" && strings.EqualFold(base.Hostname(), "api.anthropic.com") {
		return nil, fmt.Errorf("%s: no API key: set %s (create one at console.anthropic.com), or point %s at a gateway that needs none: %w",
			cfg.Provider, EnvAPIKey, EnvBaseURL, llm.ErrAuth)
	}
	// The SDK appends "v1/messages" to the root; a root given with the
	// version loses it.
	base.Path = strings.TrimSuffix(base.Path, "/v1")

	m := &Model{
		provider:  cfg.Provider,
		model:     cfg.Model,
		apiKey:    cfg.APIKey,
		keyEnv:    cfg.KeyEnv,
		maxTokens: cfg.MaxTokens,
		config:    cfg.Client,
	}
	headers := sdkwire.Middleware(sdkwire.Headers{KeyHeader: "X-Api-Key", Keyless: cfg.APIKey == "", Extra: cfg.Header.Clone()})
	opts := []option.RequestOption{
		// Config and New read the environment; the SDK's own reading
		// (ANTHROPIC_AUTH_TOKEN, profiles, …) must not send other credentials.
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base.String() + "/"),
		option.WithHTTPClient(cfg.Client.Client()),
		// llm.CallModel is the one retry loop; the SDK must not retry on
		// top of it.
		option.WithMaxRetries(0),
		option.WithHeader("anthropic-version", APIVersion),
		option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			return headers(req, next)
		}),
	}
	if cfg.APIKey != "" {
		// As x-api-key, the header API keys are documented with; the
		// SDK's WithAPIKey sends a bearer token.
		opts = append(opts, option.WithHeader("X-Api-Key", cfg.APIKey))
	}
	m.client = anthropic.NewClient(opts...)
	return m, nil
}

// Name returns the configured model name.
func (m *Model) Name() string { return m.model }

// Provider returns the provider name used in errors.
func (m *Model) Provider() string { return m.provider }

// Generate sends the conversation to /v1/messages. With llm.OnDelta it
// streams. A response schema is honoured through a forced tool call whose
// input becomes Response.Content. Errors are *llm.APIError values matching
// the llm sentinels.
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
			return nil, m.failure(ctx, err)
		}
		return resp, nil
	})
}

// failure is the error Generate returns for a failed attempt, with the
// tokens a stream cut off after message_start reported.
func (m *Model) failure(ctx context.Context, err error) error {
	src := sdkwire.Source{Provider: m.provider, APIKey: m.apiKey, KeyEnv: m.keyEnv, EnvAPIKey: EnvAPIKey, Decode: decodeError}
	out := src.Failure(ctx, err)
	var spent *spentError
	var apiErr *llm.APIError
	if errors.As(err, &spent) && errors.As(out, &apiErr) {
		apiErr.Usage = spent.usage
	}
	return out
}
