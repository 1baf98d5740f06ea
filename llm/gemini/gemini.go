package gemini

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"google.golang.org/genai"

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
	client *genai.Client
	model  string
	apiKey string
	keyEnv string
	cfg    llm.ClientConfig
	thinks bool
	log    *slog.Logger
}

var _ llm.Model = (*Model)(nil)

// New returns a Model for cfg. It does not read the environment (see
// NewFromEnv) and makes no network call.
func New(ctx context.Context, cfg Config) (*Model, error) {
	key := strings.TrimSpace(cfg.APIKey)
	if key == "" {
		return nil, fmt.Errorf("gemini: %w: set %s (or %s) to a key from %s, or pass Config.APIKey",
			ErrNoAPIKey, EnvAPIKey, EnvGoogleAPIKey, apiKeyURL)
	}
	name := strings.TrimSpace(cfg.Model)
	if name == "" {
		name = DefaultModel
	}
	if strings.ContainsAny(name, "?&") || strings.Contains(name, "..") {
		return nil, fmt.Errorf("gemini: model name %q is not valid: %w", name, llm.ErrNoModel)
	}
	base := strings.TrimSpace(cfg.BaseURL)
	if base == "" {
		base = DefaultBaseURL
	}
	httpClient := cfg.Client.Client()
	httpClient.Transport = recordingTransport{next: httpClient.Transport}
	gc, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:     key,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: httpClient,
		// RetryOptions stay nil: genai then makes exactly one attempt, and
		// the retries of cfg.Client (in httpClient's transport) are the only
		// ones, so they never multiply.
		HTTPOptions: genai.HTTPOptions{BaseURL: base, APIVersion: "v1beta"},
	})
	if err != nil {
		return nil, fmt.Errorf("gemini: creating the client: %s", redact(err.Error(), key))
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Model{
		client: gc,
		model:  name,
		apiKey: key,
		keyEnv: cfg.KeyEnv,
		cfg:    cfg.Client,
		thinks: cfg.IncludeThoughts,
		log:    logger,
	}, nil
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
	return llm.Call(ctx, m.cfg, provider, func(ctx context.Context) (*llm.Response, error) {
		info := &responseInfo{}
		ctx = context.WithValue(ctx, responseInfoKey{}, info)
		var (
			resp *genai.GenerateContentResponse
			err  error
		)
		if req.OnDelta != nil {
			resp, err = m.stream(ctx, call, req.OnDelta)
		} else {
			resp, err = m.client.Models.GenerateContent(ctx, m.model, call.contents, call.config)
		}
		if err != nil {
			return nil, m.apiError(err, info, call.combined)
		}
		return m.convert(resp)
	})
}

// recordingTransport notes the status and Retry-After header of the last
// response a call received (genai's errors carry neither header nor, for
// streams, always the status) in the responseInfo of the request's context.
type recordingTransport struct{ next http.RoundTripper }

func (t recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if resp != nil {
		if info, ok := r.Context().Value(responseInfoKey{}).(*responseInfo); ok {
			info.set(resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	return resp, err
}

// CloseIdleConnections passes the call on, so http.Client's method of the
// same name keeps working through the wrapper.
func (t recordingTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
