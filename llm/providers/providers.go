package providers

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/anthropic"
	"github.com/deepgraph/deepgraph/llm/gemini"
	"github.com/deepgraph/deepgraph/llm/openai"
)

// Configuration-file keys for the settings in Options, for messages that
// tell users where a setting goes.
const (
	ConfigGeminiAPIKey    = "gemini_api_key"
	ConfigOpenAIAPIKey    = "openai_api_key"
	ConfigOpenAIBaseURL   = "openai_base_url"
	ConfigAnthropicAPIKey = "anthropic_api_key"
	ConfigOllamaHost      = "ollama_host"
)

// DefaultOllamaModel is the model Default picks for Ollama: small enough for
// a laptop, with tool calling and structured output. It must have been
// pulled (`ollama pull qwen3:8b`).
const DefaultOllamaModel = "qwen3:8b"

// Where to get API keys, for messages.
const (
	geminiKeyURL    = "https://aistudio.google.com/apikey"
	openAIKeyURL    = "https://platform.openai.com/api-keys"
	anthropicKeyURL = "https://console.anthropic.com/settings/keys"
)

// Options is what the configuration knows about reaching the providers.
// Every field is optional.
//
// A non-empty key, base URL or host here wins over the environment
// variable for it, and a rejected key is reported under its config key
// (e.g. "openai_api_key was rejected"). Leave a field empty to use the
// environment variable, which Open reads through Getenv and names in
// errors. The zero value uses the environment only.
type Options struct {
	// GeminiAPIKey is the Gemini API key; else GEMINI_API_KEY, then
	// GOOGLE_API_KEY.
	GeminiAPIKey string
	// GeminiBaseURL overrides the Gemini endpoint (a proxy); else
	// GOOGLE_GEMINI_BASE_URL, then the public API.
	GeminiBaseURL string
	// OpenAIAPIKey is the OpenAI key, also sent to OpenAI-compatible
	// servers; else OPENAI_API_KEY.
	OpenAIAPIKey string
	// OpenAIBaseURL is the API root of the OpenAI-compatible server, e.g.
	// http://localhost:8000/v1; else OPENAI_BASE_URL. Required for
	// "compatible:" specs; for "openai:" it defaults to OpenAI.
	OpenAIBaseURL string
	// AnthropicAPIKey is the Anthropic key; else ANTHROPIC_API_KEY.
	AnthropicAPIKey string
	// AnthropicBaseURL overrides the Anthropic endpoint (a gateway); else
	// ANTHROPIC_BASE_URL, then the public API.
	AnthropicBaseURL string
	// OllamaHost is where Ollama listens ("host:port" or a URL); else
	// OLLAMA_HOST, then localhost:11434.
	OllamaHost string
	// Client is the transport behaviour every provider shares: timeouts,
	// retries, concurrency bound.
	Client llm.ClientConfig
	// Getenv reads environment variables; nil means os.Getenv. Nothing else
	// in this package reads the environment.
	Getenv func(string) string
	// Logger receives a debug record per opened model (never a key) and is
	// handed to providers that log. Nil means no logging.
	Logger *slog.Logger
}

// env is what Options say about the environment and settings, resolved.
type env struct {
	o      Options
	getenv func(string) string
}

func (o Options) env() env {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	return env{o: o, getenv: getenv}
}

// pick returns the first non-blank of an option and environment variables,
// with the name it came from: configKey for the option, else the variable.
func (e env) pick(option, configKey string, vars ...string) (value, from string) {
	if v := strings.TrimSpace(option); v != "" {
		return v, configKey
	}
	for _, name := range vars {
		if v := strings.TrimSpace(e.getenv(name)); v != "" {
			return v, name
		}
	}
	return "", ""
}

func (e env) geminiKey() (string, string) {
	return e.pick(e.o.GeminiAPIKey, ConfigGeminiAPIKey, gemini.EnvAPIKey, gemini.EnvGoogleAPIKey)
}

func (e env) openAIKey() (string, string) {
	return e.pick(e.o.OpenAIAPIKey, ConfigOpenAIAPIKey, openai.EnvAPIKey)
}

func (e env) openAIBaseURL() (string, string) {
	return e.pick(e.o.OpenAIBaseURL, ConfigOpenAIBaseURL, openai.EnvBaseURL)
}

func (e env) anthropicKey() (string, string) {
	return e.pick(e.o.AnthropicAPIKey, ConfigAnthropicAPIKey, anthropic.EnvAPIKey)
}

func (e env) ollamaHost() (string, string) {
	return e.pick(e.o.OllamaHost, ConfigOllamaHost, openai.EnvOllamaHost)
}

// Open returns the model a spec names ("provider:model", see
// llm.ParseSpec), configured from opts:
//
//	gemini:MODEL      llm/gemini; key from GeminiAPIKey, GEMINI_API_KEY or GOOGLE_API_KEY
//	openai:MODEL      llm/openai; key from OpenAIAPIKey or OPENAI_API_KEY, base URL
//	                  from OpenAIBaseURL or OPENAI_BASE_URL (default OpenAI)
//	anthropic:MODEL   llm/anthropic; key from AnthropicAPIKey or ANTHROPIC_API_KEY
//	ollama:MODEL      Ollama's OpenAI-compatible API at OllamaHost or OLLAMA_HOST
//	                  (default localhost:11434); no key is sent
//	compatible:MODEL  an OpenAI-compatible server at OpenAIBaseURL or
//	                  OPENAI_BASE_URL (required); the OpenAI key if one is set
//
// Errors match llm.ErrInvalidSpec for a spec that does not parse (and
// llm.ErrNoModel for an empty one), llm.ErrAuth for a missing key and
// llm.ErrNoModel for a compatible server without a base URL; their text
// names the environment variable and config key to set. Open makes no
// network call.
func Open(ctx context.Context, spec string, opts Options) (llm.Model, error) {
	provider, model, err := llm.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	e := opts.env()
	var (
		m   llm.Model
		how opened
	)
	switch provider {
	case llm.ProviderGemini:
		m, how, err = e.openGemini(ctx, model)
	case llm.ProviderOpenAI:
		m, how, err = e.openOpenAI(model)
	case llm.ProviderAnthropic:
		m, how, err = e.openAnthropic(model)
	case llm.ProviderOllama:
		m, how, err = e.openOllama(model)
	case llm.ProviderCompatible:
		m, how, err = e.openCompatible(model)
	default:
		return nil, fmt.Errorf("%s:%s: %w: llm.ParseSpec accepts provider %q but llm/providers cannot open it",
			provider, model, llm.ErrUnsupported, provider)
	}
	if err != nil {
		return nil, err
	}
	if opts.Logger != nil {
		attrs := []any{"provider", provider, "model", model, "server", redactURL(how.server)}
		if how.keyFrom != "" {
			attrs = append(attrs, "key_from", how.keyFrom)
		}
		opts.Logger.DebugContext(ctx, "llm model opened", attrs...)
	}
	return m, nil
}

// opened is what Open logs about a model it opened.
type opened struct {
	keyFrom string // the variable or config key the key came from; "" for none
	server  string // the base URL
}

func (e env) openGemini(ctx context.Context, model string) (llm.Model, opened, error) {
	key, keyFrom := e.geminiKey()
	if key == "" {
		return nil, opened{}, &setupError{
			msg: fmt.Sprintf("%s:%s needs a Gemini API key: set %s (or %s) in the environment, or %s in the config file; get a key at %s",
				llm.ProviderGemini, model, gemini.EnvAPIKey, gemini.EnvGoogleAPIKey, ConfigGeminiAPIKey, geminiKeyURL),
			errs: []error{llm.ErrAuth, gemini.ErrNoAPIKey},
		}
	}
	base, _ := e.pick(e.o.GeminiBaseURL, "", gemini.EnvBaseURL)
	m, err := gemini.New(ctx, gemini.Config{
		Model:   model,
		APIKey:  key,
		KeyEnv:  keyFrom,
		BaseURL: base,
		Client:  e.o.Client,
		Logger:  e.o.Logger,
	})
	if err != nil {
		return nil, opened{}, err
	}
	if base == "" {
		base = gemini.DefaultBaseURL
	}
	return m, opened{keyFrom: keyFrom, server: base}, nil
}

func (e env) openOpenAI(model string) (llm.Model, opened, error) {
	key, keyFrom := e.openAIKey()
	base, _ := e.openAIBaseURL()
	if base == "" {
		base = openai.DefaultBaseURL
	}
	if key == "" && isHost(base, "api.openai.com") {
		return nil, opened{}, &setupError{
			msg: fmt.Sprintf("%s:%s needs an OpenAI API key: set %s in the environment, or %s in the config file (keys: %s); "+
				"for an OpenAI-compatible server set %s and use %s:<model>, for local models set %s and use %s:<model>",
				llm.ProviderOpenAI, model, openai.EnvAPIKey, ConfigOpenAIAPIKey, openAIKeyURL,
				openai.EnvBaseURL, llm.ProviderCompatible, openai.EnvOllamaHost, llm.ProviderOllama),
			errs: []error{llm.ErrAuth},
		}
	}
	return e.newOpenAI(llm.ProviderOpenAI, model, key, keyFrom, base)
}

func (e env) openCompatible(model string) (llm.Model, opened, error) {
	base, _ := e.openAIBaseURL()
	if base == "" {
		return nil, opened{}, &setupError{
			msg: fmt.Sprintf("%s:%s needs the server's base URL: set %s in the environment, or %s in the config file, to its API root, "+
				"e.g. http://localhost:8000/v1 (vLLM), http://localhost:1234/v1 (LM Studio), https://openrouter.ai/api/v1 "+
				"or https://api.deepseek.com/v1; a key, if the server needs one, goes in %s",
				llm.ProviderCompatible, model, openai.EnvBaseURL, ConfigOpenAIBaseURL, openai.EnvAPIKey),
			errs: []error{llm.ErrNoModel},
		}
	}
	key, keyFrom := e.openAIKey()
	return e.newOpenAI(llm.ProviderCompatible, model, key, keyFrom, base)
}

// newOpenAI opens an OpenAI or OpenAI-compatible server that provider
// names in errors.
func (e env) newOpenAI(provider, model, key, keyFrom, base string) (llm.Model, opened, error) {
	m, err := openai.New(openai.Config{
		Model:    model,
		APIKey:   key,
		KeyEnv:   keyFrom,
		BaseURL:  base,
		Provider: provider,
		Client:   e.o.Client,
		Getenv:   e.getenv,
	})
	if err != nil {
		return nil, opened{}, err
	}
	return m, opened{keyFrom: keyFrom, server: base}, nil
}

func (e env) openAnthropic(model string) (llm.Model, opened, error) {
	key, keyFrom := e.anthropicKey()
	base, _ := e.pick(e.o.AnthropicBaseURL, "", anthropic.EnvBaseURL)
	if base == "" {
		base = anthropic.DefaultBaseURL
	}
	if key == "" && isHost(base, "api.anthropic.com") {
		return nil, opened{}, &setupError{
			msg: fmt.Sprintf("%s:%s needs an Anthropic API key: set %s in the environment, or %s in the config file (keys: %s)",
				llm.ProviderAnthropic, model, anthropic.EnvAPIKey, ConfigAnthropicAPIKey, anthropicKeyURL),
			errs: []error{llm.ErrAuth},
		}
	}
	m, err := anthropic.New(anthropic.Config{
		Model:   model,
		APIKey:  key,
		KeyEnv:  keyFrom,
		BaseURL: base,
		Client:  e.o.Client,
		Getenv:  e.getenv,
	})
	if err != nil {
		return nil, opened{}, err
	}
	return m, opened{keyFrom: keyFrom, server: base}, nil
}

func (e env) openOllama(model string) (llm.Model, opened, error) {
	host, from := e.ollamaHost()
	base, err := openai.OllamaBaseURL(host)
	if err != nil {
		if from == ConfigOllamaHost {
			return nil, opened{}, fmt.Errorf("%s: %s in the config file: %w", llm.ProviderOllama, ConfigOllamaHost, err)
		}
		return nil, opened{}, fmt.Errorf("%s: %w", llm.ProviderOllama, err)
	}
	// BaseURL is set, so NewOllama reads no environment; OPENAI_API_KEY is
	// never sent to Ollama.
	m, err := openai.NewOllama(openai.Config{
		Model:   model,
		BaseURL: base,
		Client:  e.o.Client,
		Getenv:  e.getenv,
	})
	if err != nil {
		return nil, opened{}, err
	}
	return m, opened{server: base}, nil
}

// Default returns the spec of the model to use when none is configured,
// from the keys opts and the environment hold, in this order:
//
//	a Gemini key (GEMINI_API_KEY, GOOGLE_API_KEY)  gemini:gemini-2.5-flash
//	OPENAI_API_KEY                                 openai:gpt-4.1-mini
//	ANTHROPIC_API_KEY                              anthropic:claude-sonnet-4-5
//	OLLAMA_HOST, set explicitly                    ollama:qwen3:8b
//
// ok is false when none is set; HowToConfigure says what to do then.
// OPENAI_BASE_URL alone does not choose a model: a compatible server's model
// name must be given (compatible:MODEL).
func Default(opts Options) (spec string, ok bool) {
	e := opts.env()
	switch {
	case has(e.geminiKey()):
		return llm.ProviderGemini + ":" + gemini.DefaultModel, true
	case has(e.openAIKey()):
		return llm.ProviderOpenAI + ":" + openai.DefaultModel, true
	case has(e.anthropicKey()):
		return llm.ProviderAnthropic + ":" + anthropic.DefaultModel, true
	case has(e.ollamaHost()):
		return llm.ProviderOllama + ":" + DefaultOllamaModel, true
	}
	return "", false
}

func has(value, _ string) bool { return value != "" }

// HowToConfigure is the help to print when no model is configured: the
// environment variables each provider reads, where to get keys, and how to
// choose a model. Lines are at most 80 columns.
func HowToConfigure() string {
	return howToConfigure
}

const howToConfigure = `No language model is configured. Set one of these environment variables:

  GEMINI_API_KEY     Google Gemini, the default (gemini:gemini-2.5-flash);
                     get a key at https://aistudio.google.com/apikey
  OPENAI_API_KEY     OpenAI (openai:gpt-4.1-mini)
  OPENAI_BASE_URL    an OpenAI-compatible server such as vLLM, LM Studio,
                     llama.cpp, OpenRouter or DeepSeek, e.g.
                     http://localhost:8000/v1; its key, if any, goes in
                     OPENAI_API_KEY; choose its model with compatible:<model>
  ANTHROPIC_API_KEY  Anthropic Claude (anthropic:claude-sonnet-4-5)
  OLLAMA_HOST        local models through Ollama, e.g. localhost:11434,
                     with a pulled model such as ollama:qwen3:8b

Choose the model with --model provider:model (providers: gemini, openai,
anthropic, ollama, compatible), or set it in the config file. The settings
above can go in the config file too: gemini_api_key, openai_api_key,
openai_base_url, anthropic_api_key, ollama_host.
`

// setupError is a provider that cannot be opened because a setting is
// missing; it matches the llm sentinels in errs.
type setupError struct {
	msg  string
	errs []error
}

func (e *setupError) Error() string   { return e.msg }
func (e *setupError) Unwrap() []error { return e.errs }

// isHost reports whether rawURL's host is host (any case); false for a URL
// that does not parse (the provider reports that).
func isHost(rawURL, host string) bool {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	return err == nil && strings.EqualFold(u.Hostname(), host)
}

// redactURL is a base URL for logs, without user information or query.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(invalid URL)"
	}
	return u.Scheme + "://" + u.Host + u.Path
}
