package search

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Brave defaults and limits.
const (
	EnvBraveAPIKey       = "BRAVE_API_KEY"
	DefaultBraveBaseURL  = "https://api.search.brave.com"
	braveMaxResultsLimit = 20
)

// BraveConfig configures a Brave Search client.
type BraveConfig struct {
	// APIKey (the subscription token) is required; BraveFromEnv fills it
	// from BRAVE_API_KEY when empty.
	APIKey string
	// BaseURL defaults to DefaultBraveBaseURL.
	BaseURL string
	// Country is a two-letter country code biasing results ("us", "de");
	// empty means Brave's default.
	Country string
	// SafeSearch is "off", "moderate" (Brave's default) or "strict".
	SafeSearch string
	// OmitExtraSnippets stops asking for up to five extra excerpts per
	// result. By default they are requested (plans without them ignore the
	// flag) and appended to Result.Snippet.
	OmitExtraSnippets bool
	HTTPOptions
}

// Brave searches with the Brave Search web API (GET /res/v1/web/search).
type Brave struct {
	endpoint string
	cfg      BraveConfig
	api      *apiClient
}

var _ Searcher = (*Brave)(nil)

// NewBrave returns a Brave Search client.
func NewBrave(cfg BraveConfig) (*Brave, error) {
	cfg.APIKey = strings.TrimSpace(cfg.APIKey)
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("brave: no API key; set %s or the Brave API key in the config: %w", EnvBraveAPIKey, ErrNotConfigured)
	}
	endpoint, err := endpointURL("brave", cfg.BaseURL, DefaultBraveBaseURL, "/res/v1/web/search")
	if err != nil {
		return nil, err
	}
	switch cfg.SafeSearch {
	case "", "off", "moderate", "strict":
	default:
		return nil, fmt.Errorf("brave: SafeSearch %q; want off, moderate or strict", cfg.SafeSearch)
	}
	return &Brave{endpoint: endpoint, cfg: cfg,
		api: newAPIClient("brave", cfg.HTTPOptions, EnvBraveAPIKey, cfg.APIKey, braveRateLimitHeaders)}, nil
}

// BraveFromEnv is NewBrave with an empty cfg.APIKey taken from
// BRAVE_API_KEY. It fails with an error naming the variable when both are
// empty.
func BraveFromEnv(cfg BraveConfig) (*Brave, error) {
	if strings.TrimSpace(cfg.APIKey) == "" {
		cfg.APIKey = os.Getenv(EnvBraveAPIKey)
	}
	return NewBrave(cfg)
}

// Name returns "brave".
func (b *Brave) Name() string { return "brave" }

type braveResponse struct {
	Type string `json:"type"`
	Web  *struct {
		Results []struct {
			Title         string   `json:"title"`
			URL           string   `json:"url"`
			Description   string   `json:"description"`
			ExtraSnippets []string `json:"extra_snippets"`
			PageAge       string   `json:"page_age"`
			Age           string   `json:"age"`
		} `json:"results"`
	} `json:"web"`
}

// Search runs the query. Options.Language becomes Brave's search_lang
// (BCP 47 tags are mapped to Brave's codes, e.g. "ja" → "jp", "zh-TW" →
// "zh-hant"); TimeRange becomes freshness; MaxResults is capped at 20.
func (b *Brave) Search(ctx context.Context, query string, opts Options) ([]Result, error) {
	q, err := checkQuery(b.Name(), query)
	if err != nil {
		return nil, err
	}
	opts, err = opts.resolve(braveMaxResultsLimit)
	if err != nil {
		return nil, err
	}
	v := url.Values{}
	v.Set("q", q)
	v.Set("count", strconv.Itoa(opts.MaxResults))
	if opts.Language != "" {
		v.Set("search_lang", braveLang(opts.Language))
	}
	if f := braveFreshness[opts.TimeRange]; f != "" {
		v.Set("freshness", f)
	}
	if b.cfg.Country != "" {
		v.Set("country", strings.ToLower(b.cfg.Country))
	}
	if b.cfg.SafeSearch != "" {
		v.Set("safesearch", b.cfg.SafeSearch)
	}
	if !b.cfg.OmitExtraSnippets {
		v.Set("extra_snippets", "true")
	}
	callCtx, cancel := b.api.withTimeout(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(callCtx, http.MethodGet, b.endpoint+"?"+v.Encode(), nil)
	if err != nil {
		return nil, &APIError{Provider: b.Name(), Message: "building the request: " + err.Error(), Err: err}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Subscription-Token", b.cfg.APIKey)
	var resp braveResponse
	if err := b.api.do(ctx, req, &resp, braveHint); err != nil {
		return nil, err
	}
	if resp.Web == nil {
		return []Result{}, nil
	}
	now := time.Now()
	results := make([]Result, 0, len(resp.Web.Results))
	for _, r := range resp.Web.Results {
		snippet := plainText(r.Description)
		seen := map[string]bool{snippet: true}
		for _, extra := range r.ExtraSnippets {
			if e := plainText(extra); !seen[e] {
				seen[e] = true
				snippet += "\n" + e
			}
		}
		res := Result{Title: plainText(r.Title), URL: r.URL, Snippet: snippet}
		if t, ok := parseTime(r.PageAge, now); ok {
			res.Published = t
		} else if t, ok := parseTime(r.Age, now); ok {
			res.Published = t
		}
		results = append(results, res)
	}
	return finish(results, b.Name(), opts.MaxResults), nil
}

var braveFreshness = map[string]string{
	TimeRangeDay: "pd", TimeRangeWeek: "pw", TimeRangeMonth: "pm", TimeRangeYear: "py",
}

// braveLang maps a BCP 47 tag to Brave's search_lang codes.
func braveLang(tag string) string {
	parts := strings.FieldsFunc(strings.ToLower(tag), func(r rune) bool { return r == '-' || r == '_' })
	if len(parts) == 0 {
		return ""
	}
	has := func(subtags ...string) bool {
		for _, p := range parts[1:] {
			for _, s := range subtags {
				if p == s {
					return true
				}
			}
		}
		return false
	}
	switch parts[0] {
	case "ja":
		return "jp"
	case "zh":
		if has("hant", "tw", "hk", "mo") {
			return "zh-hant"
		}
		return "zh-hans"
	case "pt":
		if has("br") {
			return "pt-br"
		}
		return "pt-pt"
	case "en":
		if has("gb", "uk") {
			return "en-gb"
		}
		return "en"
	case "no", "nn", "nb":
		return "nb"
	case "iw":
		return "he"
	}
	return parts[0]
}

// braveHint reports Brave's "invalid token" answer (HTTP 422 with code
// SUBSCRIPTION_TOKEN_INVALID) as the authentication failure it is.
func braveHint(status int, msg string, body []byte) (int, string) {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	if strings.Contains(e.Error.Code, "TOKEN") || strings.Contains(e.Error.Code, "UNAUTHORIZED") {
		return http.StatusUnauthorized, fmt.Sprintf("%s (HTTP %d)", msg, status)
	}
	return status, msg
}

// braveRateLimitHeaders gives a 429 from Brave a Retry-After, computed from
// X-RateLimit-Remaining / X-RateLimit-Reset ("1, 1419704": one value per
// window, seconds until it resets): the latest reset among the exhausted
// windows. A monthly quota thus yields a wait beyond the retry cap, and the
// search fails at once instead of retrying in vain.
func braveRateLimitHeaders(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "" {
			return resp, err
		}
		resets := splitInts(resp.Header.Get("X-RateLimit-Reset"))
		remaining := splitInts(resp.Header.Get("X-RateLimit-Remaining"))
		wait := -1
		for i, r := range resets {
			if r >= 0 && (len(remaining) == 0 || i < len(remaining) && remaining[i] == 0) {
				wait = max(wait, r)
			}
		}
		if wait < 0 && len(resets) > 0 && resets[0] >= 0 {
			wait = resets[0]
		}
		if wait >= 0 {
			resp.Header.Set("Retry-After", strconv.Itoa(wait))
		}
		return resp, nil
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// splitInts reads "1, 1419704" as [1 1419704]; an unreadable part is -1,
// so positions keep matching between headers.
func splitInts(s string) []int {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 {
			n = -1
		}
		out = append(out, n)
	}
	return out
}
