package search

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const braveKey = "BSA-test-subscription-token-42"

// braveResults follows the Brave web search API's response shape.
const braveResults = `{
  "query": {"original": "brave search", "show_strict_warning": false, "is_navigational": true,
            "spellcheck_off": true, "country": "us", "more_results_available": true},
  "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}], "top": [], "side": []},
  "type": "search",
  "web": {
    "type": "search",
    "results": [
      {"title": "Private Search Engine - <strong>Brave</strong> <strong>Search</strong>",
       "url": "https://search.brave.com/", "is_source_local": false, "is_source_both": false,
       "description": "Search the Web. Privately. All from an independent index. Get started with <strong>Brave</strong> <strong>Search</strong>.",
       "page_age": "2024-05-06T19:01:03",
       "profile": {"name": "Brave", "url": "https://search.brave.com/", "long_name": "search.brave.com", "img": "https://imgs.search.brave.com/x.png"},
       "language": "en", "family_friendly": true, "type": "search_result", "subtype": "generic",
       "meta_url": {"scheme": "https", "netloc": "search.brave.com", "hostname": "search.brave.com", "path": ""},
       "age": "May 6, 2024",
       "extra_snippets": ["Brave Search runs on its own index &amp; never tracks you.", "Search the Web. Privately. All from an independent index. Get started with Brave Search."]},
      {"title": "Brave Search API", "url": "https://brave.com/search/api/", "description": "Power your apps.",
       "age": "3 days ago", "type": "search_result"},
      {"title": "Brave Search API (dup)", "url": "https://brave.com/search/api", "description": "dup", "type": "search_result"}
    ],
    "family_friendly": true
  }
}`

func TestBraveSearch(t *testing.T) {
	api := newFakeAPI(t, answer{body: braveResults})
	b, err := NewBrave(BraveConfig{APIKey: braveKey, BaseURL: api.URL, Country: "US", SafeSearch: "strict", HTTPOptions: fastRetries(api)})
	require.NoError(t, err)
	assert.Equal(t, "brave", b.Name())
	got, err := b.Search(context.Background(), "brave search", Options{MaxResults: 30, Language: "ja-JP", TimeRange: "week"})
	require.NoError(t, err)

	reqs := api.requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	assert.Equal(t, "GET", r.Method)
	assert.Equal(t, "/res/v1/web/search", r.Path)
	assert.Equal(t, "brave search", r.Query.Get("q"))
	assert.Equal(t, "20", r.Query.Get("count"), "count is capped at 20")
	assert.Equal(t, "jp", r.Query.Get("search_lang"))
	assert.Equal(t, "pw", r.Query.Get("freshness"))
	assert.Equal(t, "us", r.Query.Get("country"))
	assert.Equal(t, "strict", r.Query.Get("safesearch"))
	assert.Equal(t, "true", r.Query.Get("extra_snippets"))
	assert.Equal(t, braveKey, r.Header.Get("X-Subscription-Token"))
	assert.Equal(t, "application/json", r.Header.Get("Accept"))
	assert.False(t, r.Query.Has("offset"))

	require.Len(t, got, 2, "the duplicate is dropped")
	assert.Equal(t, "Private Search Engine - Brave Search", got[0].Title)
	assert.Equal(t, "Search the Web. Privately. All from an independent index. Get started with Brave Search.\n"+
		"Brave Search runs on its own index & never tracks you.", got[0].Snippet,
		"tags stripped, an extra snippet equal to the description skipped")
	assert.Equal(t, time.Date(2024, 5, 6, 19, 1, 3, 0, time.UTC), got[0].Published, "page_age first")
	assert.Equal(t, "brave", got[0].Provider)
	assert.WithinDuration(t, time.Now().AddDate(0, 0, -3), got[1].Published, time.Hour, "relative age as fallback")
}

func TestBraveRequestDefaults(t *testing.T) {
	api := newFakeAPI(t, answer{body: `{"type":"search","query":{"original":"q"}}`})
	b, err := NewBrave(BraveConfig{APIKey: braveKey, BaseURL: api.URL, OmitExtraSnippets: true, HTTPOptions: fastRetries(api)})
	require.NoError(t, err)
	got, err := b.Search(context.Background(), "q", Options{})
	require.NoError(t, err)
	assert.NotNil(t, got)
	assert.Empty(t, got, "a response without web results is an empty answer")
	q := api.requests()[0].Query
	assert.Equal(t, "5", q.Get("count"))
	for _, absent := range []string{"search_lang", "freshness", "country", "safesearch", "extra_snippets"} {
		assert.False(t, q.Has(absent), absent)
	}
}

func TestBraveErrors(t *testing.T) {
	tests := []struct {
		name     string
		answers  []answer
		wantIs   error
		wantMsg  string
		wantReqs int
	}{
		{name: "invalid token is reported as 401",
			answers: []answer{{status: 422, body: `{"type":"ErrorResponse","error":{"id":"c5a1","status":422,"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token is invalid.","meta":{"component":"authentication"}},"time":1717000000}`}},
			wantIs:  ErrAuth, wantMsg: "brave: BRAVE_API_KEY was rejected (401): The provided subscription token is invalid. (SUBSCRIPTION_TOKEN_INVALID) (HTTP 422)", wantReqs: 1},
		{name: "validation error",
			answers: []answer{{status: 422, body: `{"type":"ErrorResponse","error":{"id":"x","status":422,"code":"VALIDATION","detail":"Unable to validate request parameter(s)."}}`}},
			wantIs:  ErrBadRequest, wantMsg: "Unprocessable Entity (422): Unable to validate request parameter(s). (VALIDATION)", wantReqs: 1},
		{name: "per-second limit is retried",
			answers: []answer{{status: 429, header: map[string]string{"X-RateLimit-Limit": "1, 15000", "X-RateLimit-Remaining": "0, 14000", "X-RateLimit-Reset": "0, 1419704"},
				body: `{"type":"ErrorResponse","error":{"status":429,"code":"RATE_LIMITED","detail":"Request rate limit exceeded for plan."}}`}},
			wantIs: ErrRateLimited, wantMsg: "Request rate limit exceeded", wantReqs: 4},
		{name: "monthly quota fails at once",
			answers: []answer{{status: 429, header: map[string]string{"X-RateLimit-Remaining": "1, 0", "X-RateLimit-Reset": "1, 1419704"},
				body: `{"type":"ErrorResponse","error":{"status":429,"code":"QUOTA_LIMITED","detail":"Quota exceeded."}}`}},
			wantIs: ErrRateLimited, wantMsg: "Quota exceeded", wantReqs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, tt.answers...)
			b, err := NewBrave(BraveConfig{APIKey: braveKey, BaseURL: api.URL, HTTPOptions: fastRetries(api)})
			require.NoError(t, err)
			_, err = b.Search(context.Background(), "q", Options{})
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.wantIs)
			assert.Contains(t, err.Error(), tt.wantMsg)
			assert.NotContains(t, err.Error(), braveKey)
			assert.Len(t, api.requests(), tt.wantReqs)
		})
	}
}

func TestBraveRateLimitHeaders(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header map[string]string
		want   string
	}{
		{name: "exhausted per-second window", status: 429, header: map[string]string{"X-RateLimit-Remaining": "0, 999", "X-RateLimit-Reset": "1, 86400"}, want: "1"},
		{name: "exhausted monthly window", status: 429, header: map[string]string{"X-RateLimit-Remaining": "3, 0", "X-RateLimit-Reset": "1, 86400"}, want: "86400"},
		{name: "both exhausted", status: 429, header: map[string]string{"X-RateLimit-Remaining": "0, 0", "X-RateLimit-Reset": "1, 86400"}, want: "86400"},
		{name: "no remaining header", status: 429, header: map[string]string{"X-RateLimit-Reset": "2"}, want: "2"},
		{name: "no exhausted window", status: 429, header: map[string]string{"X-RateLimit-Remaining": "5, 5", "X-RateLimit-Reset": "3, 9"}, want: "3"},
		{name: "existing Retry-After wins", status: 429, header: map[string]string{"Retry-After": "7", "X-RateLimit-Reset": "1"}, want: "7"},
		{name: "no headers", status: 429, want: ""},
		{name: "garbage", status: 429, header: map[string]string{"X-RateLimit-Reset": "soon"}, want: ""},
		{name: "only 429 is touched", status: 503, header: map[string]string{"X-RateLimit-Reset": "1"}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				h := http.Header{}
				for k, v := range tt.header {
					h.Set(k, v)
				}
				return &http.Response{StatusCode: tt.status, Header: h, Body: io.NopCloser(strings.NewReader(""))}, nil
			})
			req, err := http.NewRequest(http.MethodGet, "http://brave.test/", nil)
			require.NoError(t, err)
			resp, err := braveRateLimitHeaders(base).RoundTrip(req)
			require.NoError(t, err)
			assert.Equal(t, tt.want, resp.Header.Get("Retry-After"))
		})
	}
}

func TestBraveLang(t *testing.T) {
	tests := map[string]string{
		"en": "en", "en-US": "en", "en-GB": "en-gb", "de": "de", "DE-at": "de", "ja": "jp", "ja-JP": "jp",
		"zh": "zh-hans", "zh-CN": "zh-hans", "zh-Hans": "zh-hans", "zh-TW": "zh-hant", "zh-Hant-HK": "zh-hant",
		"pt": "pt-pt", "pt-BR": "pt-br", "pt_BR": "pt-br", "no": "nb", "nn": "nb", "iw": "he", "fr-CA": "fr", "": "",
	}
	for in, want := range tests {
		assert.Equal(t, want, braveLang(in), in)
	}
}

func TestBraveConfig(t *testing.T) {
	_, err := NewBrave(BraveConfig{})
	require.ErrorIs(t, err, ErrNotConfigured)
	assert.Contains(t, err.Error(), "BRAVE_API_KEY")
	_, err = NewBrave(BraveConfig{APIKey: braveKey, SafeSearch: "maximum"})
	assert.ErrorContains(t, err, "SafeSearch")
	b, err := NewBrave(BraveConfig{APIKey: braveKey})
	require.NoError(t, err)
	assert.Equal(t, "https://api.search.brave.com/res/v1/web/search", b.endpoint)
}
