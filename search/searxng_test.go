package search

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// searxngPage1 is the shape of SearXNG's webapp.py JSON output.
const searxngPage1 = `{
  "query": "go generics",
  "number_of_results": 0,
  "results": [
    {"url": "https://go.dev/doc/tutorial/generics", "title": "Tutorial: Getting started with generics",
     "content": "This tutorial introduces the basics of generics in Go.", "engine": "duckduckgo",
     "parsed_url": ["https", "go.dev", "/doc/tutorial/generics", "", "", ""], "template": "default.html",
     "engines": ["duckduckgo", "google"], "positions": [1, 2], "publishedDate": null, "score": 4.0,
     "category": "general", "thumbnail": "", "priority": ""},
    {"url": "https://go.dev/doc/tutorial/generics/?utm_source=searxng", "title": "Generics tutorial (dup)",
     "content": "duplicate", "engine": "bing", "engines": ["bing"], "positions": [3], "score": 1.0, "category": "general"},
    {"url": "https://blog.example.org/generics", "title": "Generics in Go &amp; why", "content": "An <b>overview</b> of type parameters",
     "engine": "bing", "engines": ["bing"], "positions": [2], "publishedDate": "2024-03-05T00:00:00", "score": 2.5, "category": "general"},
    {"url": "magnet:?xt=urn:btih:0123456789", "title": "go generics torrent", "engine": "piratebay", "score": 0.1},
    {"url": "https://news.example.com/go-1-18", "title": "Go 1.18 ships generics", "content": "Released.",
     "engine": "google news", "publishedDate": "2022-03-15 09:30:00", "score": 1.5}
  ],
  "answers": [], "corrections": [], "infoboxes": [], "suggestions": ["go generics tutorial"],
  "unresponsive_engines": [["brave", "timeout"], ["qwant", "CAPTCHA"]]
}`

func TestSearXNGSearch(t *testing.T) {
	api := newFakeAPI(t, answer{body: searxngPage1})
	safe := 1
	s, err := NewSearXNG(SearXNGConfig{
		BaseURL:     api.URL + "/searx/",
		Categories:  []string{"general", "news"},
		Engines:     []string{"duckduckgo", "bing"},
		SafeSearch:  &safe,
		MaxPages:    1,
		HTTPOptions: fastRetries(api),
	})
	require.NoError(t, err)
	assert.Equal(t, "searxng", s.Name())

	got, err := s.Search(context.Background(), "  go generics ", Options{MaxResults: 10, Language: "de", TimeRange: "Month"})
	require.NoError(t, err)

	reqs := api.requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	assert.Equal(t, "GET", r.Method)
	assert.Equal(t, "/searx/search", r.Path)
	assert.Equal(t, "go generics", r.Query.Get("q"))
	assert.Equal(t, "json", r.Query.Get("format"))
	assert.Equal(t, "de", r.Query.Get("language"))
	assert.Equal(t, "month", r.Query.Get("time_range"))
	assert.Equal(t, "general,news", r.Query.Get("categories"))
	assert.Equal(t, "duckduckgo,bing", r.Query.Get("engines"))
	assert.Equal(t, "1", r.Query.Get("safesearch"))
	assert.False(t, r.Query.Has("pageno"), "page 1 is the default")
	assert.Equal(t, "application/json", r.Header.Get("Accept"))

	require.Len(t, got, 3, "the duplicate and the magnet link are dropped")
	assert.Equal(t, Result{
		Title: "Tutorial: Getting started with generics", URL: "https://go.dev/doc/tutorial/generics",
		Snippet: "This tutorial introduces the basics of generics in Go.", Score: 4, Provider: "searxng",
	}, got[0])
	assert.Equal(t, "Generics in Go & why", got[1].Title)
	assert.Equal(t, "An overview of type parameters", got[1].Snippet)
	assert.Equal(t, time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC), got[1].Published)
	assert.Equal(t, time.Date(2022, 3, 15, 9, 30, 0, 0, time.UTC), got[2].Published)
}

func TestSearXNGPagination(t *testing.T) {
	page := func(urls ...string) string {
		var items []string
		for _, u := range urls {
			items = append(items, fmt.Sprintf(`{"url": %q, "title": "t", "content": "c", "engine": "e", "score": 1}`, u))
		}
		return `{"query": "q", "results": [` + strings.Join(items, ",") + `], "unresponsive_engines": []}`
	}
	tests := []struct {
		name      string
		maxPages  int
		max       int
		answers   []answer
		wantReqs  int
		wantCount int
	}{
		{name: "first page is enough", max: 2, answers: []answer{{body: page("https://a.example/1", "https://a.example/2", "https://a.example/3")}}, wantReqs: 1, wantCount: 2},
		{name: "second page fills up", max: 4, answers: []answer{{body: page("https://a.example/1", "https://a.example/2")}, {body: page("https://a.example/2/", "https://a.example/3", "https://a.example/4")}}, wantReqs: 2, wantCount: 4},
		{name: "an empty page stops", max: 5, maxPages: 3, answers: []answer{{body: page("https://a.example/1")}, {body: page()}}, wantReqs: 2, wantCount: 1},
		{name: "MaxPages bounds the requests", max: 10, maxPages: 2, answers: []answer{{body: page("https://a.example/1")}, {body: page("https://a.example/2")}, {body: page("https://a.example/3")}}, wantReqs: 2, wantCount: 2},
		{name: "a failing later page keeps the first", max: 5, answers: []answer{{body: page("https://a.example/1")}, {status: 400, body: "bad"}}, wantReqs: 2, wantCount: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, tt.answers...)
			s, err := NewSearXNG(SearXNGConfig{BaseURL: api.URL, MaxPages: tt.maxPages, HTTPOptions: fastRetries(api)})
			require.NoError(t, err)
			got, err := s.Search(context.Background(), "q", Options{MaxResults: tt.max})
			require.NoError(t, err)
			assert.Len(t, got, tt.wantCount)
			reqs := api.requests()
			require.Len(t, reqs, tt.wantReqs)
			for i, r := range reqs[1:] {
				assert.Equal(t, fmt.Sprint(i+2), r.Query.Get("pageno"))
			}
		})
	}
}

func TestSearXNGErrors(t *testing.T) {
	tests := []struct {
		name     string
		answers  []answer
		wantIs   error
		wantMsg  []string
		wantReqs int
	}{
		{name: "json format disabled", answers: []answer{{status: 403, header: map[string]string{"Content-Type": "text/html"}, body: "<html><body>Forbidden</body></html>"}},
			wantIs: ErrAuth, wantMsg: []string{"searxng", "403", "settings.yml", "formats: [html, json]"}, wantReqs: 1},
		{name: "limiter", answers: []answer{{status: 429, header: map[string]string{"Retry-After": "3600"}, body: "Too Many Requests"}},
			wantIs: ErrRateLimited, wantMsg: []string{"limiter"}, wantReqs: 1},
		{name: "every engine failed", answers: []answer{{body: `{"query":"q","results":[],"unresponsive_engines":[["google","timeout"],["bing","HTTP error 503"],["ddg"]]}`}},
			wantIs: ErrUnavailable, wantMsg: []string{"google (timeout)", "bing (HTTP error 503)", "ddg"}, wantReqs: 1},
		{name: "html instead of json", answers: []answer{{header: map[string]string{"Content-Type": "text/html; charset=utf-8"}, body: "<!doctype html><title>SearXNG</title>"}},
			wantIs: ErrUnavailable, wantMsg: []string{"expected JSON, got text/html"}, wantReqs: 1},
		{name: "malformed json", answers: []answer{{body: `{"results": [`}},
			wantIs: ErrUnavailable, wantMsg: []string{"malformed JSON"}, wantReqs: 1},
		{name: "server errors are retried", answers: []answer{{status: 502, body: "bad gateway"}},
			wantIs: ErrUnavailable, wantMsg: []string{"Bad Gateway (502)"}, wantReqs: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, tt.answers...)
			s, err := NewSearXNG(SearXNGConfig{BaseURL: api.URL, HTTPOptions: fastRetries(api)})
			require.NoError(t, err)
			_, err = s.Search(context.Background(), "q", Options{})
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.wantIs)
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, "searxng", apiErr.Provider)
			for _, m := range tt.wantMsg {
				assert.Contains(t, err.Error(), m)
			}
			assert.Len(t, api.requests(), tt.wantReqs)
		})
	}
}

func TestSearXNGRetryThenSuccess(t *testing.T) {
	api := newFakeAPI(t, answer{status: 503, header: map[string]string{"Retry-After": "0"}}, answer{body: searxngPage1})
	s, err := NewSearXNG(SearXNGConfig{BaseURL: api.URL, HTTPOptions: fastRetries(api)})
	require.NoError(t, err)
	got, err := s.Search(context.Background(), "q", Options{MaxResults: 1})
	require.NoError(t, err)
	assert.Len(t, got, 1)
	assert.Len(t, api.requests(), 2)
}

func TestSearXNGEmpty(t *testing.T) {
	api := newFakeAPI(t, answer{body: `{"query":"zzz","number_of_results":0,"results":[],"answers":[],"unresponsive_engines":[]}`})
	s, err := NewSearXNG(SearXNGConfig{BaseURL: api.URL, HTTPOptions: fastRetries(api)})
	require.NoError(t, err)
	got, err := s.Search(context.Background(), "zzz", Options{})
	require.NoError(t, err)
	assert.NotNil(t, got)
	assert.Empty(t, got)
}

func TestSearXNGCredentialsStayOutOfErrors(t *testing.T) {
	api := newFakeAPI(t, answer{status: 500, body: "oops"})
	base := strings.Replace(api.URL, "http://", "http://alice:s3cr3t-pass@", 1)
	s, err := NewSearXNG(SearXNGConfig{BaseURL: base, HTTPOptions: HTTPOptions{HTTPClient: api.Client(), MaxRetries: -1}})
	require.NoError(t, err)
	_, err = s.Search(context.Background(), "q", Options{})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "s3cr3t-pass")
	user, pass, ok := basicAuth(api.requests()[0].Header.Get("Authorization"))
	require.True(t, ok, "basic auth from the URL is sent")
	assert.Equal(t, "alice", user)
	assert.Equal(t, "s3cr3t-pass", pass)

	_, err = NewSearXNG(SearXNGConfig{BaseURL: "ftp://alice:s3cr3t-pass@host/"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "s3cr3t-pass")
}

func TestSearXNGConfigErrors(t *testing.T) {
	bad := 3
	tests := []struct {
		name string
		cfg  SearXNGConfig
		want string
	}{
		{name: "no URL", cfg: SearXNGConfig{}, want: "set SEARXNG_URL"},
		{name: "not http", cfg: SearXNGConfig{BaseURL: "localhost:8888"}, want: "not an http(s) URL"},
		{name: "bad safesearch", cfg: SearXNGConfig{BaseURL: "http://localhost:8888", SafeSearch: &bad}, want: "SafeSearch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewSearXNG(tt.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	_, err := NewSearXNG(SearXNGConfig{})
	assert.ErrorIs(t, err, ErrNotConfigured)
}

func TestSearchOptionErrors(t *testing.T) {
	api := newFakeAPI(t, answer{body: searxngPage1})
	s, err := NewSearXNG(SearXNGConfig{BaseURL: api.URL, HTTPOptions: fastRetries(api)})
	require.NoError(t, err)
	tests := []struct {
		name  string
		query string
		opts  Options
		want  string
	}{
		{name: "empty query", query: "  ", want: "empty query"},
		{name: "negative max", query: "q", opts: Options{MaxResults: -1}, want: "MaxResults is -1"},
		{name: "bad time range", query: "q", opts: Options{TimeRange: "fortnight"}, want: `unknown time range "fortnight"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Search(context.Background(), tt.query, tt.opts)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrBadRequest)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	assert.Empty(t, api.requests(), "invalid searches cost no request")
}

func TestSearchTimeoutAndCancel(t *testing.T) {
	api := newFakeAPI(t, answer{body: searxngPage1, delay: 5 * time.Second})
	s, err := NewSearXNG(SearXNGConfig{BaseURL: api.URL, HTTPOptions: HTTPOptions{HTTPClient: api.Client(), Timeout: 30 * time.Millisecond, MaxRetries: -1}})
	require.NoError(t, err)
	_, err = s.Search(context.Background(), "q", Options{})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrUnavailable)
	assert.Contains(t, err.Error(), "no complete reply within 30ms")

	s2, err := NewSearXNG(SearXNGConfig{BaseURL: api.URL, HTTPOptions: HTTPOptions{HTTPClient: api.Client()}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	// Without the cancellation the reply would come, after its delay.
	_, err = s2.Search(ctx, "q", Options{})
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	var apiErr *APIError
	assert.False(t, errors.As(err, &apiErr), "the caller's cancellation is not a provider failure")
}
