package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/tmc/langchaingo/llms"
	lcanthropic "github.com/tmc/langchaingo/llms/anthropic"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/lcbridge"
	"github.com/deepgraph/deepgraph/llm/internal/wiretap"
	"github.com/deepgraph/deepgraph/schemas"
)

// Defaults and the environment variables New reads.
const (
	DefaultModel     = "claude-sonnet-4-5"
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultMaxTokens = 8192

	EnvAPIKey  = "ANTHROPIC_API_KEY"
	EnvBaseURL = "ANTHROPIC_BASE_URL"

	// APIVersion is the anthropic-version header langchaingo sends.
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
	lc        *lcanthropic.LLM
	provider  string
	model     string
	apiKey    string
	keyEnv    string
	keyless   bool
	maxTokens int
	client    llm.ClientConfig
}

var _ llm.Model = (*Model)(nil)

// placeholderKey satisfies langchaingo's rule that a token is always set
// (anthropic.ErrMissingToken); the transport removes the x-api-key header it
// produces, so keyless servers never see it.
const placeholderKey = "deepgraph-no-key"

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
	// langchaingo appends "/messages" to a root that includes the version.
	if !strings.HasSuffix(base.Path, "/v1") {
		base.Path += "/v1"
	}

	m := &Model{
		provider:  cfg.Provider,
		model:     cfg.Model,
		apiKey:    cfg.APIKey,
		keyEnv:    cfg.KeyEnv,
		keyless:   cfg.APIKey == "",
		maxTokens: cfg.MaxTokens,
		client:    cfg.Client,
	}
	hc := cfg.Client.Client()
	hc.Transport = &wiretap.Transport{Next: hc.Transport, KeyHeader: "X-Api-Key", Keyless: m.keyless, Header: cfg.Header.Clone()}
	token := cfg.APIKey
	if token == "" {
		token = placeholderKey
	}
	lc, err := lcanthropic.New(
		lcanthropic.WithToken(token),
		lcanthropic.WithModel(cfg.Model),
		lcanthropic.WithBaseURL(base.String()),
		lcanthropic.WithHTTPClient(hc),
	)
	if err != nil {
		return nil, fmt.Errorf("%s: creating the client: %w", cfg.Provider, err)
	}
	m.lc = lc
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
	return llm.CallModel(ctx, m.client, m.provider, req.OnDelta, func(ctx context.Context, onDelta func(llm.Delta)) (*llm.Response, error) {
		p := p
		p.call.onDelta = onDelta
		return m.send(ctx, p)
	})
}

// prepared is a call ready to send: langchaingo's inputs plus what the
// transport must change in the request body.
type prepared struct {
	msgs []llms.MessageContent
	opts []llms.CallOption
	call callSpec
}

func (m *Model) send(ctx context.Context, p prepared) (*llm.Response, error) {
	c := newCall(p.call)
	ctx = wiretap.WithCall(ctx, c)
	lcResp, err := lcbridge.Generate(ctx, m.lc, p.msgs, p.opts...)
	switch {
	case err == nil:
		if err = c.check(ctx); err == nil {
			if c.spec.stream {
				return m.build(c, c.fromStream()), nil
			}
			return m.build(c, c.fromChoices(lcResp)), nil
		}
	case errors.Is(err, lcanthropic.ErrEmptyResponse):
		// langchaingo rejects a reply without content blocks, which
		// Anthropic legitimately sends (e.g. nothing to add after tool
		// results); the transport knows whether the reply was whole.
		if cerr := c.check(ctx); cerr != nil {
			err = cerr
		} else if c.whole() {
			return m.build(c, c.fromStream()), nil
		}
	}
	return nil, m.fail(ctx, c, err)
}
