package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/httpx"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/providers"
)

// ErrSetup matches every error of building the program's parts from a
// configuration — a model that cannot be opened, a search back end that is
// not configured, a workspace that is not allowed. Nothing has been sent
// anywhere yet; the user has to change the configuration. The CLI exits
// with status 2 on them.
var ErrSetup = errors.New("setup")

// ErrNoModel is the setup error of a configuration naming no model at all
// (no key of any provider is set): the CLI prints providers.HowToConfigure.
var ErrNoModel = errors.New("no language model is configured")

// setupError wraps a setup failure so it matches ErrSetup and its cause.
type setupError struct{ err error }

func (e *setupError) Error() string   { return e.err.Error() }
func (e *setupError) Unwrap() []error { return []error{ErrSetup, e.err} }

func setupErr(format string, args ...any) error {
	return &setupError{fmt.Errorf(format, args...)}
}

// Roles of the deep-search graph, in the order they run.
var Roles = []string{llm.RoleQuery, llm.RoleResearch, llm.RoleReflection, llm.RoleAnswer}

// Models are the models of a run, one per role, opened from a Config. Roles
// naming the same spec share one model (and so one provider client).
type Models struct {
	byRole map[string]llm.Model
	specs  map[string]string
}

// Model returns the model of a role (llm.RoleQuery, …).
func (m *Models) Model(role string) llm.Model { return m.byRole[role] }

// Spec returns the model spec of a role.
func (m *Models) Spec(role string) string { return m.specs[role] }

// Specs returns the model spec per role.
func (m *Models) Specs() map[string]string {
	out := make(map[string]string, len(m.specs))
	for k, v := range m.specs {
		out[k] = v
	}
	return out
}

// ProviderOptions turns a Config into the options of providers.Open: the
// keys and endpoints as the configuration resolved them, the client policy
// (timeout, retries, concurrency) and the logger.
//
// A key that came from the provider's standard variable is left to
// Options.Getenv (Config.Getenv), so a rejected key is reported under that
// variable; one from the config file, a DEEPGRAPH_ variable or a flag is set
// in Options and reported under its config key.
func ProviderOptions(cfg *config.Config, logger *slog.Logger) providers.Options {
	opt := func(key, value string) string {
		if src := cfg.Source(key); src.Kind == config.FromEnv && !strings.HasPrefix(src.Name, "DEEPGRAPH_") {
			return ""
		}
		return value
	}
	return providers.Options{
		GeminiAPIKey:     opt("gemini_api_key", cfg.GeminiAPIKey.Reveal()),
		GeminiBaseURL:    opt("gemini_base_url", cfg.GeminiBaseURL),
		OpenAIAPIKey:     opt("openai_api_key", cfg.OpenAIAPIKey.Reveal()),
		OpenAIBaseURL:    opt("openai_base_url", cfg.OpenAIBaseURL),
		AnthropicAPIKey:  opt("anthropic_api_key", cfg.AnthropicAPIKey.Reveal()),
		AnthropicBaseURL: opt("anthropic_base_url", cfg.AnthropicBaseURL),
		OllamaHost:       opt("ollama_host", cfg.OllamaHost),
		Client:           ClientConfig(cfg),
		Getenv:           cfg.Getenv,
		Logger:           logger,
	}
}

// ClientConfig is the LLM client policy of a Config: the per-call timeout,
// the retries and the concurrency bound per provider (none unless
// max_concurrency is set; never below a round's queries — see limits.go).
func ClientConfig(cfg *config.Config) llm.ClientConfig {
	return llm.ClientConfig{
		MaxRetries:     retries(cfg.Retries),
		MaxConcurrency: modelLimit(cfg),
		Timeout:        cfg.LLMTimeout,
		RetryBackoff:   cfg.RetryBackoff,
	}
}

// retries maps the retries key (0 = none) onto the clients' convention
// (0 = the default, negative = none).
// modelRetry is the retry policy of the nodes that call a model: their
// default (nodes.DefaultModelRetry), or none when the configuration asks
// for no retries at all (retries: 0).
func modelRetry(cfg *config.Config) *graph.RetryPolicy {
	if cfg.Retries <= 0 {
		return &graph.RetryPolicy{MaxAttempts: 1}
	}
	return nil
}

func retries(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// DefaultModel chooses the model when the configuration names none, for
// config.Loader.DefaultModel: the first provider whose key (or Ollama host)
// is configured, as providers.Default orders them.
func DefaultModel(getenv func(string) string) (spec, why string) {
	spec, ok := providers.Default(providers.Options{Getenv: getenv})
	if !ok {
		return "", ""
	}
	p, _, _ := llm.ParseSpec(spec)
	switch p {
	case llm.ProviderGemini:
		why = "a Gemini key is set"
	case llm.ProviderOpenAI:
		why = "an OpenAI key is set"
	case llm.ProviderAnthropic:
		why = "an Anthropic key is set"
	case llm.ProviderOllama:
		why = "ollama_host is set"
	default:
		why = "chosen from the keys present"
	}
	return spec, why
}

// OpenModels opens the model of every role. A role without a model of its
// own uses cfg.Model; when that is empty too, the error matches ErrNoModel.
// Models of one provider share one bound on requests in flight
// (max_concurrency, none by default), whatever their names.
func OpenModels(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*Models, error) {
	return newModelCache().models(ctx, cfg, logger)
}

// OpenModel opens one model spec with cfg's keys and client policy.
func OpenModel(ctx context.Context, cfg *config.Config, spec string, logger *slog.Logger) (llm.Model, error) {
	return newModelCache().open(ctx, cfg, spec, logger)
}

// modelCache opens each model spec once, and gives the models of one
// provider one transport, which bounds their requests in flight.
type modelCache struct {
	mu     sync.Mutex
	bySpec map[string]llm.Model
	shared map[string]*http.Client // by provider
}

func newModelCache() *modelCache {
	return &modelCache{bySpec: map[string]llm.Model{}, shared: map[string]*http.Client{}}
}

// models opens the model of every role of cfg.
func (c *modelCache) models(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*Models, error) {
	m := &Models{byRole: map[string]llm.Model{}, specs: map[string]string{}}
	for _, role := range Roles {
		model, err := c.open(ctx, cfg, cfg.RoleModel(role), logger)
		if err != nil {
			return nil, err
		}
		m.byRole[role], m.specs[role] = model, cfg.RoleModel(role)
	}
	return m, nil
}

func (c *modelCache) open(ctx context.Context, cfg *config.Config, spec string, logger *slog.Logger) (llm.Model, error) {
	if spec == "" {
		return nil, &setupError{ErrNoModel}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if model, ok := c.bySpec[spec]; ok {
		return model, nil
	}
	provider, _, err := llm.ParseSpec(spec)
	if err != nil {
		return nil, &setupError{err}
	}
	opts := ProviderOptions(cfg, logger)
	// One transport per provider bounds its requests in flight; each model's
	// own client then only retries on top of it.
	base, ok := c.shared[provider]
	if !ok {
		base = httpx.NewTransport(providerTransport(), httpx.Policy{MaxAttempts: 1, Concurrency: modelLimit(cfg)}).Client()
		c.shared[provider] = base
	}
	opts.Client.HTTPClient = base
	opts.Client.MaxConcurrency = -1
	model, err := providers.Open(ctx, spec, opts)
	if err != nil {
		return nil, &setupError{err}
	}
	c.bySpec[spec] = model
	return model, nil
}
