package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// EnvSearXNGURL names the variable SearXNGFromEnv reads the instance URL from.
const EnvSearXNGURL = "SEARXNG_URL"

// DefaultSearXNGMaxPages is how many result pages a SearXNG search reads
// at most when the first does not hold enough distinct results.
const DefaultSearXNGMaxPages = 2

// SearXNGConfig configures a SearXNG client.
type SearXNGConfig struct {
	// BaseURL is the instance, e.g. "http://localhost:8888" or
	// "https://search.example.org/searxng". Required; SearXNGFromEnv fills
	// it from SEARXNG_URL when empty.
	BaseURL string
	// Categories and Engines restrict the search ("general", "news";
	// "google", "duckduckgo"); empty means the instance's defaults.
	Categories []string
	Engines    []string
	// SafeSearch is 0 (off), 1 (moderate) or 2 (strict); nil means the
	// instance's default.
	SafeSearch *int
	// MaxPages bounds the result pages read per search; 0 means
	// DefaultSearXNGMaxPages.
	MaxPages int
	HTTPOptions
}

// SearXNG searches a SearXNG metasearch instance through its JSON API
// (GET /search?format=json). The instance must allow the json format:
// in settings.yml, search.formats must list json.
type SearXNG struct {
	base     *url.URL
	cfg      SearXNGConfig
	api      *apiClient
	maxPages int
}

var _ Searcher = (*SearXNG)(nil)

// NewSearXNG returns a SearXNG client.
func NewSearXNG(cfg SearXNGConfig) (*SearXNG, error) {
	raw := strings.TrimSpace(cfg.BaseURL)
	if raw == "" {
		return nil, fmt.Errorf("searxng: no instance URL; set %s or the SearXNG base URL in the config: %w", EnvSearXNGURL, ErrNotConfigured)
	}
	base, err := url.Parse(raw)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("searxng: base URL %q is not an http(s) URL such as http://localhost:8888: %w", redactURL(raw), ErrNotConfigured)
	}
	base.Path = strings.TrimSuffix(strings.TrimSuffix(base.Path, "/"), "/search")
	base.RawQuery, base.Fragment = "", ""
	if cfg.SafeSearch != nil && (*cfg.SafeSearch < 0 || *cfg.SafeSearch > 2) {
		return nil, fmt.Errorf("searxng: SafeSearch is %d; want 0, 1 or 2", *cfg.SafeSearch)
	}
	pages := cfg.MaxPages
	if pages <= 0 {
		pages = DefaultSearXNGMaxPages
	}
	secret := ""
	if p, ok := base.User.Password(); ok {
		secret = p
	}
	return &SearXNG{base: base, cfg: cfg, api: newAPIClient("searxng", cfg.HTTPOptions, "", secret, nil), maxPages: pages}, nil
}

// SearXNGFromEnv is NewSearXNG with an empty cfg.BaseURL taken from
// SEARXNG_URL. It fails with an error naming the variable when both are
// empty.
func SearXNGFromEnv(cfg SearXNGConfig) (*SearXNG, error) {
	if strings.TrimSpace(cfg.BaseURL) == "" {
		cfg.BaseURL = os.Getenv(EnvSearXNGURL)
	}
	return NewSearXNG(cfg)
}

// Name returns "searxng".
func (s *SearXNG) Name() string { return "searxng" }

type searxngResponse struct {
	Query   string `json:"query"`
	Results []struct {
		URL           string    `json:"url"`
		Title         string    `json:"title"`
		Content       string    `json:"content"`
		Engine        string    `json:"engine"`
		Score         flexFloat `json:"score"`
		PublishedDate flexTime  `json:"publishedDate"`
	} `json:"results"`
	// UnresponsiveEngines holds [engine, reason] pairs.
	UnresponsiveEngines []json.RawMessage `json:"unresponsive_engines"`
}

// Search runs the query. Results are read page by page (up to MaxPages)
// until enough distinct ones arrive. When the instance returns nothing
// because every engine failed (unresponsive_engines), that is an error
// matching ErrUnavailable, not an empty answer, so a Chain falls back.
func (s *SearXNG) Search(ctx context.Context, query string, opts Options) ([]Result, error) {
	q, err := checkQuery(s.Name(), query)
	if err != nil {
		return nil, err
	}
	opts, err = opts.resolve(0)
	if err != nil {
		return nil, err
	}
	callCtx, cancel := s.api.withTimeout(ctx)
	defer cancel()

	var all []Result
	var failed []string
	for page := 1; page <= s.maxPages; page++ {
		resp, err := s.page(ctx, callCtx, q, opts, page)
		if err != nil {
			if page > 1 && ctx.Err() == nil {
				// Later pages are a bonus; keep what the first gave.
				s.api.logger.WarnContext(ctx, "searxng: reading a further result page failed", "page", page, "err", err)
				break
			}
			return nil, err
		}
		failed = unresponsive(resp.UnresponsiveEngines)
		for _, r := range resp.Results {
			all = append(all, Result{
				Title:     plainText(r.Title),
				URL:       r.URL,
				Snippet:   plainText(r.Content),
				Score:     float64(r.Score),
				Published: r.PublishedDate.Time,
			})
		}
		if len(resp.Results) == 0 || len(finish(all, s.Name(), opts.MaxResults)) >= opts.MaxResults {
			break
		}
	}
	out := finish(all, s.Name(), opts.MaxResults)
	if len(out) == 0 && len(failed) > 0 {
		return nil, &APIError{Provider: s.Name(), Err: errEnginesFailed,
			Message: "no results, and these engines failed: " + strings.Join(failed, "; ")}
	}
	if len(failed) > 0 {
		s.api.logger.DebugContext(ctx, "searxng: some engines did not answer", "query", q, "engines", failed)
	}
	return out, nil
}

var errEnginesFailed = errors.New("every SearXNG engine failed")

func (s *SearXNG) page(parent, ctx context.Context, q string, opts Options, page int) (*searxngResponse, error) {
	u := *s.base
	u.Path += "/search"
	v := url.Values{}
	v.Set("q", q)
	v.Set("format", "json")
	if page > 1 {
		v.Set("pageno", strconv.Itoa(page))
	}
	if opts.Language != "" {
		v.Set("language", opts.Language)
	}
	if opts.TimeRange != "" {
		v.Set("time_range", opts.TimeRange)
	}
	if len(s.cfg.Categories) > 0 {
		v.Set("categories", strings.Join(s.cfg.Categories, ","))
	}
	if len(s.cfg.Engines) > 0 {
		v.Set("engines", strings.Join(s.cfg.Engines, ","))
	}
	if s.cfg.SafeSearch != nil {
		v.Set("safesearch", strconv.Itoa(*s.cfg.SafeSearch))
	}
	u.RawQuery = v.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &APIError{Provider: s.Name(), Message: "building the request: " + err.Error(), Err: err}
	}
	req.Header.Set("Accept", "application/json")
	var out searxngResponse
	if err := s.api.do(parent, req, &out, searxngHint); err != nil {
		return nil, err
	}
	return &out, nil
}

func searxngHint(status int, msg string, _ []byte) (int, string) {
	switch status {
	case http.StatusForbidden:
		return status, "the instance refused format=json; enable it in SearXNG's settings.yml with `search: formats: [html, json]` and restart SearXNG (" + msg + ")"
	case http.StatusTooManyRequests:
		return status, "SearXNG's bot limiter refused the request; for API use, disable `server.limiter` in settings.yml or pass this client's address (" + msg + ")"
	}
	return status, msg
}

// unresponsive renders SearXNG's [engine, reason] pairs.
func unresponsive(raw []json.RawMessage) []string {
	var out []string
	for _, r := range raw {
		var pair []any
		if json.Unmarshal(r, &pair) != nil || len(pair) == 0 {
			continue
		}
		parts := make([]string, 0, len(pair))
		for _, p := range pair {
			parts = append(parts, fmt.Sprint(p))
		}
		if len(parts) == 1 {
			out = append(out, parts[0])
			continue
		}
		out = append(out, parts[0]+" ("+strings.Join(parts[1:], ", ")+")")
	}
	return out
}

// redactURL hides a password in a URL meant for an error message.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(unparseable URL)"
}
