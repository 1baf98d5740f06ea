package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// Defaults of Config.
const (
	DefaultModel   = "gemini-2.5-flash"
	DefaultBaseURL = "https://generativelanguage.googleapis.com/"
)

// Environment variables NewFromEnv reads.
const (
	// EnvAPIKey is the preferred variable for the Gemini API key.
	EnvAPIKey = "GEMINI_API_KEY"
	// EnvGoogleAPIKey is read when EnvAPIKey is unset or empty.
	EnvGoogleAPIKey = "GOOGLE_API_KEY"
	// EnvBaseURL overrides the API endpoint (a proxy, or a test server).
	EnvBaseURL = "GOOGLE_GEMINI_BASE_URL"
)

// provider names this provider in errors.
const provider = "gemini"

// apiKeyURL is where a user creates a Gemini API key.
const apiKeyURL = "https://aistudio.google.com/apikey"

// ErrNoAPIKey is returned by New and NewFromEnv when no API key is configured.
var ErrNoAPIKey = errors.New("no Gemini API key")

// Config configures a Model. Only APIKey is required.
type Config struct {
	// Model is the Gemini model name, e.g. "gemini-2.5-flash" (the default)
	// or "gemini-3-pro-preview". A "models/" prefix is accepted.
	Model string
	// APIKey is the Gemini API key. It is sent only in the x-goog-api-key
	// header and never appears in errors.
	APIKey string
	// KeyEnv names the environment variable APIKey came from, so a rejected
	// key is reported as "GEMINI_API_KEY was rejected (401)". NewFromEnv sets
	// it; leave it empty when the key does not come from the environment.
	KeyEnv string
	// BaseURL is the API endpoint; empty means DefaultBaseURL. Requests go to
	// BaseURL + "v1beta/models/{model}:generateContent".
	BaseURL string
	// Client is the transport behaviour (retries, concurrency bound, per-call
	// timeout) shared by all providers.
	Client llm.ClientConfig
	// IncludeThoughts asks thinking models for summaries of their thoughts,
	// returned in Response.Reasoning and streamed as Delta.Reasoning. Models
	// without thinking reject it.
	IncludeThoughts bool
	// Logger receives debug records about provider-side decisions (for
	// example a schema sent as instructions instead of natively). Nil means
	// no logging.
	Logger *slog.Logger
}

// Model is a Gemini chat model. It implements llm.Model and is safe for
// concurrent use.
type Model struct {
	http     *http.Client
	endpoint string // BaseURL + "v1beta/models/{model}", without the ":method"
	model    string
	apiKey   string
	keyEnv   string
	cfg      llm.ClientConfig
	thinks   bool
	log      *slog.Logger
}

var _ llm.Model = (*Model)(nil)

// New returns a Model for cfg. It does not read the environment (see
// NewFromEnv) and makes no network call.
func New(_ context.Context, cfg Config) (*Model, error) {
	key := strings.TrimSpace(cfg.APIKey)
	if key == "" {
		return nil, fmt.Errorf("gemini: %w: set %s (or %s) to a key from %s, or pass Config.APIKey",
			ErrNoAPIKey, EnvAPIKey, EnvGoogleAPIKey, apiKeyURL)
	}
	name := strings.TrimSpace(cfg.Model)
	if name == "" {
		name = DefaultModel
	}
	if strings.ContainsAny(name, "?&#% ") || strings.Contains(name, "..") {
		return nil, fmt.Errorf("gemini: model name %q is not valid: %w", name, llm.ErrNoModel)
	}
	base := strings.TrimSpace(cfg.BaseURL)
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		shown := base
		if err == nil {
			shown = u.Redacted()
		} else {
			shown = "(unparsable)"
		}
		return nil, fmt.Errorf("gemini: base URL %s is not an http(s) URL without query (set %s or Config.BaseURL to e.g. %s): %w",
			shown, EnvBaseURL, DefaultBaseURL, llm.ErrBadRequest)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Model{
		http:     cfg.Client.Client(),
		endpoint: strings.TrimRight(u.String(), "/") + "/" + apiVersion + "/" + resourceName(name),
		model:    name,
		apiKey:   key,
		keyEnv:   cfg.KeyEnv,
		cfg:      cfg.Client,
		thinks:   cfg.IncludeThoughts,
		log:      logger,
	}, nil
}

// apiVersion is the version of the Gemini API this package speaks.
const apiVersion = "v1beta"

// resourceName is the model's resource name in request paths: "models/NAME"
// unless name already names a resource ("models/…", "tunedModels/…").
func resourceName(name string) string {
	if strings.HasPrefix(name, "models/") || strings.HasPrefix(name, "tunedModels/") {
		return name
	}
	return "models/" + name
}

// NewFromEnv is New with what cfg leaves empty taken from the environment:
// the API key from GEMINI_API_KEY, else GOOGLE_API_KEY (KeyEnv records
// which), and the endpoint from GOOGLE_GEMINI_BASE_URL.
func NewFromEnv(ctx context.Context, cfg Config) (*Model, error) {
	return New(ctx, withEnv(cfg, os.LookupEnv))
}

// withEnv fills cfg's empty key and base URL from lookup.
func withEnv(cfg Config, lookup func(string) (string, bool)) Config {
	if strings.TrimSpace(cfg.APIKey) == "" {
		for _, env := range []string{EnvAPIKey, EnvGoogleAPIKey} {
			if v, ok := lookup(env); ok && strings.TrimSpace(v) != "" {
				cfg.APIKey, cfg.KeyEnv = strings.TrimSpace(v), env
				break
			}
		}
	}
	if strings.TrimSpace(cfg.BaseURL) == "" {
		if v, ok := lookup(EnvBaseURL); ok {
			cfg.BaseURL = strings.TrimSpace(v)
		}
	}
	return cfg
}

// Name returns the configured model name.
func (m *Model) Name() string { return m.model }

// Generate sends msgs to Gemini and returns its reply. With llm.OnDelta it
// streams (streamGenerateContent over SSE) and returns the same Response as
// without. See the package documentation for how requests and replies map.
func (m *Model) Generate(ctx context.Context, msgs []schemas.Message, opts ...llm.Option) (*llm.Response, error) {
	req := llm.NewRequest(opts...)
	call, err := m.buildCall(msgs, req)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(call.body)
	if err != nil {
		return nil, fmt.Errorf("gemini: encoding the request (a tool's or the response's JSON Schema?): %w: %v", llm.ErrBadRequest, err)
	}
	call.encoded = body
	// CallModel sends the call again when a stream breaks off after its 200
	// (an error matching llm.ErrStreamBroken); onDelta is nil when not
	// streaming.
	return llm.CallModel(ctx, m.cfg, provider, req.OnDelta, func(ctx context.Context, onDelta func(llm.Delta)) (*llm.Response, error) {
		var (
			resp *wireResponse
			err  error
		)
		if onDelta != nil {
			resp, err = m.stream(ctx, call, onDelta)
		} else {
			resp, err = m.generate(ctx, call)
		}
		if err != nil {
			return nil, err
		}
		return m.convert(resp)
	})
}
