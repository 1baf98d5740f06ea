package search_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/search/netguard"
)

// A SearXNG instance answering /search?format=json, as a real one does once
// settings.yml lists json under search.formats.
func fakeSearXNG() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"query": "`+r.URL.Query().Get("q")+`", "results": [
		  {"url": "https://go.dev/doc/effective_go", "title": "Effective Go", "content": "Tips for writing clear, idiomatic Go code.", "engine": "duckduckgo", "score": 3.0, "publishedDate": null},
		  {"url": "https://go.dev/doc/effective_go/?utm_source=feed#names", "title": "Effective Go - duplicate", "content": "", "engine": "bing", "score": 1.0},
		  {"url": "https://google.github.io/styleguide/go/", "title": "Go Style Guide", "content": "Google's Go style guide.", "engine": "google", "score": 2.0, "publishedDate": "2024-01-10T00:00:00"}
		], "unresponsive_engines": []}`)
	}))
}

func ExampleSearXNG() {
	srv := fakeSearXNG()
	defer srv.Close()

	s, err := search.NewSearXNG(search.SearXNGConfig{BaseURL: srv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	results, err := s.Search(context.Background(), "go style", search.Options{MaxResults: 5, Language: "en"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		fmt.Printf("%s <%s> via %s\n", r.Title, r.URL, r.Provider)
	}
	// Output:
	// Effective Go <https://go.dev/doc/effective_go> via searxng
	// Go Style Guide <https://google.github.io/styleguide/go/> via searxng
}

func ExampleNewChain() {
	// A Tavily endpoint that rejects its key, then a working SearXNG.
	tavily := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"detail": {"error": "Unauthorized: missing or invalid API key."}}`)
	}))
	defer tavily.Close()
	searxng := fakeSearXNG()
	defer searxng.Close()

	tv, err := search.NewTavily(search.TavilyConfig{APIKey: "tvly-expired", BaseURL: tavily.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	sx, err := search.NewSearXNG(search.SearXNGConfig{BaseURL: searxng.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	chain := search.NewChain(tv, sx)
	results, err := chain.Search(context.Background(), "go style", search.Options{MaxResults: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(chain.Name(), "→", results[0].Title, "from", results[0].Provider)

	// With every provider failing, the error lists each failure.
	_, err = search.NewChain(tv).Search(context.Background(), "go style", search.Options{})
	fmt.Println(err)
	fmt.Println(errors.Is(err, search.ErrAuth))
	// Output:
	// tavily,searxng → Effective Go from searxng
	// search: all 1 providers failed: tavily: TAVILY_API_KEY was rejected (401): Unauthorized: missing or invalid API key.
	// true
}

func ExampleReader() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<html><head><title>Release notes</title><script>track()</script></head><body>
		<nav><a href="/">Home</a></nav>
		<main><h1>Release notes</h1><p>Version 2 adds <a href="/docs/streaming">streaming</a> and checkpoints.</p></main>
		<footer>© Example</footer></body></html>`)
	}))
	defer site.Close()

	// httptest servers listen on 127.0.0.1, which the SSRF guard refuses by
	// default; allow exactly that address.
	reader, err := search.NewReader(search.ReaderConfig{Guard: netguard.Config{Allow: []string{"127.0.0.1"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reader.Close()
	page, err := reader.Read(context.Background(), site.URL+"/notes")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(page.Title)
	fmt.Println(page.ContentType)
	fmt.Println(strings.ReplaceAll(page.Content, site.URL, "https://example.test"))

	// Without the allow-list, the same read is refused.
	strict, _ := search.NewReader(search.ReaderConfig{})
	_, err = strict.Read(context.Background(), site.URL)
	fmt.Println(errors.Is(err, netguard.ErrBlocked))
	// Output:
	// Release notes
	// text/html
	// # Release notes
	//
	// Version 2 adds [streaming](https://example.test/docs/streaming) and checkpoints.
	// true
}

func ExampleNormalizeURL() {
	fmt.Println(search.NormalizeURL("HTTPS://Example.com:443/Guide/?utm_source=news&b=2&a=1#intro"))
	// Output:
	// https://example.com/Guide?a=1&b=2
}

func ExampleDedup() {
	results := search.Dedup([]search.Result{
		{Title: "Guide", URL: "https://example.com/guide", Snippet: "short"},
		{Title: "Guide (mirror)", URL: "https://EXAMPLE.com/guide/#top", Content: "the full text"},
	})
	fmt.Println(len(results), results[0].Title, "|", results[0].Content)
	// Output:
	// 1 Guide | the full text
}
