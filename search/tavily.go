package search

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// Tavily defaults and limits.
const (
	EnvTavilyAPIKey       = "TAVILY_API_KEY"
	DefaultTavilyBaseURL  = "https://api.tavily.com"
	tavilyMaxResultsLimit = 20
)

// TavilyConfig configures a Tavily client.
type TavilyConfig struct {
	// APIKey ("tvly-…") is required; TavilyFromEnv fills it from
	// TAVILY_API_KEY when empty.
	APIKey string
	// BaseURL defaults to DefaultTavilyBaseURL.
	BaseURL string
	// SearchDepth is "basic" (the API's default, 1 credit) or "advanced"
	// (2 credits, better snippets).
	SearchDepth string
	// Topic is "general" (the default), "news" or "finance".
	Topic string
	// IncludeDomains and ExcludeDomains restrict the sites searched.
	IncludeDomains []string
	ExcludeDomains []string
	// OmitRawContent stops asking for each page's full text. By default it
	// is requested (include_raw_content) and returned as Result.Content,
	// which saves fetching the pages afterwards.
	OmitRawContent bool
	HTTPOptions
}

// Tavily searches with the Tavily search API (POST /search).
type Tavily struct {
	endpoint string
	cfg      TavilyConfig
	api      *apiClient
}

var _ Searcher = (*Tavily)(nil)

// NewTavily returns a Tavily client.
func NewTavily(cfg TavilyConfig) (*Tavily, error) {
	cfg.APIKey = strings.TrimSpace(cfg.APIKey)
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("tavily: no API key; set %s or the Tavily API key in the config: %w", EnvTavilyAPIKey, ErrNotConfigured)
	}
	endpoint, err := endpointURL("tavily", cfg.BaseURL, DefaultTavilyBaseURL, "/search")
	if err != nil {
		return nil, err
	}
	switch cfg.SearchDepth {
	case "", "basic", "advanced":
	default:
		return nil, fmt.Errorf("tavily: SearchDepth %q; want basic or advanced", cfg.SearchDepth)
	}
	switch cfg.Topic {
	case "", "general", "news", "finance":
	default:
		return nil, fmt.Errorf("tavily: Topic %q; want general, news or finance", cfg.Topic)
	}
	return &Tavily{endpoint: endpoint, cfg: cfg, api: newAPIClient("tavily", cfg.HTTPOptions, EnvTavilyAPIKey, cfg.APIKey, nil)}, nil
}

// TavilyFromEnv is NewTavily with an empty cfg.APIKey taken from
// TAVILY_API_KEY. It fails with an error naming the variable when both are
// empty.
func TavilyFromEnv(cfg TavilyConfig) (*Tavily, error) {
	if strings.TrimSpace(cfg.APIKey) == "" {
		cfg.APIKey = os.Getenv(EnvTavilyAPIKey)
	}
	return NewTavily(cfg)
}

// Name returns "tavily".
func (t *Tavily) Name() string { return "tavily" }

type tavilyRequest struct {
	Query             string   `json:"query"`
	MaxResults        int      `json:"max_results"`
	SearchDepth       string   `json:"search_depth,omitempty"`
	Topic             string   `json:"topic,omitempty"`
	TimeRange         string   `json:"time_range,omitempty"`
	IncludeAnswer     bool     `json:"include_answer"`
	IncludeRawContent bool     `json:"include_raw_content"`
	IncludeImages     bool     `json:"include_images"`
	IncludeDomains    []string `json:"include_domains,omitempty"`
	ExcludeDomains    []string `json:"exclude_domains,omitempty"`
}

type tavilyResponse struct {
	Query   string `json:"query"`
	Results []struct {
		Title         string    `json:"title"`
		URL           string    `json:"url"`
		Content       string    `json:"content"`
		Score         flexFloat `json:"score"`
		RawContent    *string   `json:"raw_content"`
		PublishedDate flexTime  `json:"published_date"`
	} `json:"results"`
	ResponseTime flexFloat `json:"response_time"`
	RequestID    string    `json:"request_id"`
}

// Search runs the query. Options.Language has no Tavily equivalent and is
// ignored; MaxResults is capped at 20, the API's limit.
func (t *Tavily) Search(ctx context.Context, query string, opts Options) ([]Result, error) {
	q, err := checkQuery(t.Name(), query)
	if err != nil {
		return nil, err
	}
	opts, err = opts.resolve(tavilyMaxResultsLimit)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(tavilyRequest{
		Query:             q,
		MaxResults:        opts.MaxResults,
		SearchDepth:       t.cfg.SearchDepth,
		Topic:             t.cfg.Topic,
		TimeRange:         opts.TimeRange,
		IncludeRawContent: !t.cfg.OmitRawContent,
		IncludeDomains:    t.cfg.IncludeDomains,
		ExcludeDomains:    t.cfg.ExcludeDomains,
	})
	if err != nil {
		return nil, fmt.Errorf("tavily: encoding the request: %w", err)
	}
	callCtx, cancel := t.api.withTimeout(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(callCtx, http.MethodPost, t.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &APIError{Provider: t.Name(), Message: "building the request: " + err.Error(), Err: err}
	}
	req.Header.Set("Authorization", "Bearer "+t.cfg.APIKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	var resp tavilyResponse
	if err := t.api.do(ctx, req, &resp, tavilyHint); err != nil {
		return nil, err
	}
	results := make([]Result, 0, len(resp.Results))
	for _, r := range resp.Results {
		res := Result{
			Title:     r.Title,
			URL:       r.URL,
			Snippet:   r.Content,
			Score:     float64(r.Score),
			Published: r.PublishedDate.Time,
		}
		if r.RawContent != nil {
			res.Content = *r.RawContent
		}
		results = append(results, res)
	}
	t.api.logger.DebugContext(ctx, "tavily: searched", "query", q, "results", len(results),
		"response_time", float64(resp.ResponseTime), "request_id", resp.RequestID)
	return finish(results, t.Name(), opts.MaxResults), nil
}

func tavilyHint(status int, msg string, _ []byte) (int, string) {
	switch status {
	case 432:
		return status, "the key's or plan's usage limit is exceeded; upgrade the plan or wait for the limit to reset (" + msg + ")"
	case 433:
		return status, "the pay-as-you-go limit is exceeded; raise it in the Tavily dashboard (" + msg + ")"
	}
	return status, msg
}

// endpointURL joins a configured (or default) base URL and a path.
func endpointURL(provider, base, def, path string) (string, error) {
	base = strings.TrimSpace(base)
	if base == "" {
		base = def
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s: base URL %q is not an http(s) URL such as %s: %w", provider, redactURL(base), def, ErrNotConfigured)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if !strings.HasSuffix(u.Path, path) {
		u.Path += path
	}
	u.RawQuery, u.Fragment = "", ""
	return u.String(), nil
}
