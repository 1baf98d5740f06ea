package search

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const tavilyKey = "tvly-test-0123456789abcdef"

// tavilyResults follows docs.tavily.com/api-reference/endpoint/search,
// including the documented string response_time.
const tavilyResults = `{
  "query": "Who is Leo Messi?",
  "answer": null,
  "images": [],
  "results": [
    {"title": "Lionel Messi Facts | Britannica", "url": "https://www.britannica.com/facts/Lionel-Messi",
     "content": "Lionel Messi, an Argentine footballer, is widely regarded as one of the greatest.",
     "score": 0.81025416, "raw_content": "# Lionel Messi\n\nLionel Andrés Messi (born June 24, 1987) is an Argentine footballer.",
     "favicon": "https://britannica.com/favicon.png"},
    {"title": "Messi - Wikipedia", "url": "https://en.wikipedia.org/wiki/Lionel_Messi",
     "content": "Lionel Andrés Messi is an Argentine professional footballer.", "score": 0.7, "raw_content": null,
     "published_date": "Tue, 09 Jul 2024 14:00:00 GMT"}
  ],
  "auto_parameters": {"topic": "general", "search_depth": "basic"},
  "response_time": "1.67",
  "usage": {"credits": 1},
  "request_id": "123e4567-e89b-12d3-a456-426614174111"
}`

func TestTavilySearch(t *testing.T) {
	tests := []struct {
		name        string
		cfg         TavilyConfig
		opts        Options
		response    string
		wantBody    map[string]any
		wantContent string
	}{
		{
			name:     "defaults ask for raw content",
			opts:     Options{MaxResults: 3, TimeRange: "week", Language: "de"},
			response: tavilyResults,
			wantBody: map[string]any{"query": "Who is Leo Messi?", "max_results": 3.0, "include_raw_content": true,
				"include_answer": false, "include_images": false, "time_range": "week"},
			wantContent: "# Lionel Messi\n\nLionel Andrés Messi (born June 24, 1987) is an Argentine footballer.",
		},
		{
			name: "configured depth, topic and domains; raw content omitted",
			cfg: TavilyConfig{SearchDepth: "advanced", Topic: "news", OmitRawContent: true,
				IncludeDomains: []string{"britannica.com"}, ExcludeDomains: []string{"spam.example"}},
			opts:     Options{MaxResults: 50},
			response: `{"query":"Who is Leo Messi?","results":[{"title":"t","url":"https://www.britannica.com/facts/Lionel-Messi","content":"c","score":0.5}],"response_time":0.42}`,
			wantBody: map[string]any{"query": "Who is Leo Messi?", "max_results": 20.0, "include_raw_content": false,
				"search_depth": "advanced", "topic": "news", "include_domains": []any{"britannica.com"}, "exclude_domains": []any{"spam.example"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, answer{body: tt.response})
			cfg := tt.cfg
			cfg.APIKey, cfg.BaseURL, cfg.HTTPOptions = tavilyKey, api.URL, fastRetries(api)
			tv, err := NewTavily(cfg)
			require.NoError(t, err)
			got, err := tv.Search(context.Background(), "Who is Leo Messi?", tt.opts)
			require.NoError(t, err)

			reqs := api.requests()
			require.Len(t, reqs, 1)
			r := reqs[0]
			assert.Equal(t, "POST", r.Method)
			assert.Equal(t, "/search", r.Path)
			assert.Equal(t, "Bearer "+tavilyKey, r.Header.Get("Authorization"))
			assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
			var body map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.Body), &body))
			for k, v := range tt.wantBody {
				assert.Equal(t, v, body[k], "body field %s", k)
			}
			for _, absent := range []string{"search_depth", "topic", "include_domains", "exclude_domains", "time_range"} {
				if _, want := tt.wantBody[absent]; !want {
					assert.NotContains(t, body, absent, "unset fields are omitted")
				}
			}
			assert.NotContains(t, body, "api_key", "the key travels in the header only")

			require.NotEmpty(t, got)
			assert.Equal(t, "tavily", got[0].Provider)
			assert.Equal(t, "https://www.britannica.com/facts/Lionel-Messi", got[0].URL)
			assert.Equal(t, tt.wantContent, got[0].Content)
		})
	}
}

func TestTavilyResultFields(t *testing.T) {
	api := newFakeAPI(t, answer{body: tavilyResults})
	tv, err := NewTavily(TavilyConfig{APIKey: tavilyKey, BaseURL: api.URL, HTTPOptions: fastRetries(api)})
	require.NoError(t, err)
	got, err := tv.Search(context.Background(), "Who is Leo Messi?", Options{})
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, Result{
		Title:    "Lionel Messi Facts | Britannica",
		URL:      "https://www.britannica.com/facts/Lionel-Messi",
		Snippet:  "Lionel Messi, an Argentine footballer, is widely regarded as one of the greatest.",
		Content:  "# Lionel Messi\n\nLionel Andrés Messi (born June 24, 1987) is an Argentine footballer.",
		Score:    0.81025416,
		Provider: "tavily",
	}, got[0])
	assert.Empty(t, got[1].Content, "raw_content null leaves Content empty")
	assert.Equal(t, time.Date(2024, 7, 9, 14, 0, 0, 0, time.UTC), got[1].Published)
}

func TestTavilyErrors(t *testing.T) {
	tests := []struct {
		name     string
		answers  []answer
		wantIs   error
		wantMsg  string
		wantReqs int
	}{
		{name: "bad key", answers: []answer{{status: 401, body: `{"detail":{"error":"Unauthorized: missing or invalid API key."}}`}},
			wantIs: ErrAuth, wantMsg: "tavily: TAVILY_API_KEY was rejected (401): Unauthorized: missing or invalid API key.", wantReqs: 1},
		{name: "forbidden", answers: []answer{{status: 403, body: `{"detail":{"error":"Forbidden"}}`}},
			wantIs: ErrAuth, wantMsg: "TAVILY_API_KEY was rejected (403)", wantReqs: 1},
		{name: "error echoing the key is redacted", answers: []answer{{status: 401, body: `{"detail":{"error":"invalid key ` + tavilyKey + `"}}`}},
			wantIs: ErrAuth, wantMsg: "invalid key [redacted]", wantReqs: 1},
		{name: "query too long", answers: []answer{{status: 400, body: `{"detail":{"error":"Query is too long. Max query length is 400 characters."}}`}},
			wantIs: ErrBadRequest, wantMsg: "Bad Request (400): Query is too long", wantReqs: 1},
		{name: "plan limit", answers: []answer{{status: 432, body: `{"detail":{"error":"This request exceeds your plan's set usage limit."}}`}},
			wantMsg: "usage limit is exceeded", wantReqs: 1},
		{name: "rate limited after retries", answers: []answer{{status: 429, header: map[string]string{"Retry-After": "0"}, body: `{"detail":{"error":"Rate limit exceeded"}}`}},
			wantIs: ErrRateLimited, wantMsg: "Rate limit exceeded", wantReqs: 4},
		{name: "rate limit with a long Retry-After fails at once", answers: []answer{{status: 429, header: map[string]string{"Retry-After": "600"}, body: `{"detail":{"error":"slow down"}}`}},
			wantIs: ErrRateLimited, wantMsg: "slow down", wantReqs: 1},
		{name: "server error", answers: []answer{{status: 500, body: `{"detail":{"error":"Internal Server Error"}}`}},
			wantIs: ErrUnavailable, wantMsg: "Internal Server Error", wantReqs: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, tt.answers...)
			tv, err := NewTavily(TavilyConfig{APIKey: tavilyKey, BaseURL: api.URL, HTTPOptions: fastRetries(api)})
			require.NoError(t, err)
			_, err = tv.Search(context.Background(), "q", Options{})
			require.Error(t, err)
			if tt.wantIs != nil {
				assert.ErrorIs(t, err, tt.wantIs)
			}
			assert.Contains(t, err.Error(), tt.wantMsg)
			assert.NotContains(t, err.Error(), tavilyKey, "the key never appears in errors")
			assert.Len(t, api.requests(), tt.wantReqs)
		})
	}
}

func TestTavilyRetryAfterIsRecorded(t *testing.T) {
	api := newFakeAPI(t, answer{status: 429, header: map[string]string{"Retry-After": "120"}, body: `{"detail":{"error":"slow down"}}`})
	tv, err := NewTavily(TavilyConfig{APIKey: tavilyKey, BaseURL: api.URL, HTTPOptions: fastRetries(api)})
	require.NoError(t, err)
	_, err = tv.Search(context.Background(), "q", Options{})
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 2*time.Minute, apiErr.RetryAfter)
}

func TestTavilyConfig(t *testing.T) {
	_, err := NewTavily(TavilyConfig{})
	require.ErrorIs(t, err, ErrNotConfigured)
	assert.Contains(t, err.Error(), "TAVILY_API_KEY")
	_, err = NewTavily(TavilyConfig{APIKey: tavilyKey, SearchDepth: "deep"})
	assert.ErrorContains(t, err, "SearchDepth")
	_, err = NewTavily(TavilyConfig{APIKey: tavilyKey, Topic: "sports"})
	assert.ErrorContains(t, err, "Topic")
	_, err = NewTavily(TavilyConfig{APIKey: tavilyKey, BaseURL: "api.tavily.com"})
	assert.ErrorContains(t, err, "not an http(s) URL")
	tv, err := NewTavily(TavilyConfig{APIKey: tavilyKey})
	require.NoError(t, err)
	assert.Equal(t, "https://api.tavily.com/search", tv.endpoint)
	tv, err = NewTavily(TavilyConfig{APIKey: tavilyKey, BaseURL: "https://proxy.example/tavily/"})
	require.NoError(t, err)
	assert.Equal(t, "https://proxy.example/tavily/search", tv.endpoint)
}

func TestTavilyEmpty(t *testing.T) {
	api := newFakeAPI(t, answer{body: `{"query":"zzz","answer":null,"images":[],"results":[],"response_time":0.2}`})
	tv, err := NewTavily(TavilyConfig{APIKey: tavilyKey, BaseURL: api.URL, HTTPOptions: fastRetries(api)})
	require.NoError(t, err)
	got, err := tv.Search(context.Background(), "zzz", Options{})
	require.NoError(t, err)
	assert.NotNil(t, got)
	assert.Empty(t, got)
}
