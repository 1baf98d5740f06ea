// Package search finds and reads web pages for research agents.
//
// # Searching
//
// A Searcher answers a query with Results (title, URL, snippet, sometimes
// the page's full text), best first and deduplicated by normalised URL.
// This package has three web providers, each a plain net/http client with
// a configurable base URL, tested against fakes of its real wire protocol:
//
//   - SearXNG, a self-hosted metasearch engine (GET /search?format=json;
//     configured by SEARXNG_URL). The instance must enable the json
//     format in settings.yml (search.formats: [html, json]).
//   - Tavily (POST /search; TAVILY_API_KEY). It returns each page's full
//     text as Result.Content unless TavilyConfig.OmitRawContent is set.
//   - Brave Search (GET /res/v1/web/search; BRAVE_API_KEY).
//
// The local corpus lives in search/local and is a Searcher too.
//
// Each provider has a Config with the connection settings and a FromEnv
// constructor that takes the key or URL from its variable when the config
// leaves it empty; a missing one is an error naming the variable
// (ErrNotConfigured). All share HTTPOptions: retries with backoff on 429
// and 5xx honouring Retry-After, an optional bound on requests in flight
// (none by default; set it for a provider's rate limit), a timeout
// per search and a cap on response size. Failures are *APIError values that
// match ErrRateLimited, ErrAuth, ErrBadRequest or ErrUnavailable; a
// rejected key is reported as "TAVILY_API_KEY was rejected (401): …",
// never with the key.
//
// A Chain tries several providers in order and moves to the next only when
// one fails — not when it finds nothing, since an empty answer is an
// answer. Cancelling the context stops the chain; when every provider
// fails, the *ChainError lists each failure.
//
// NormalizeURL and Dedup are the comparison rules the providers use
// (scheme and host case, default ports, fragments, trailing slashes and
// tracking parameters do not make a different page).
//
// # Reading
//
// A Reader turns a URL into a Page: the main content as Markdown (via
// Readability and html-to-markdown, with scripts, styles and navigation
// dropped and links made absolute), or the text of plain-text, Markdown
// and JSON documents. Binary content and PDF are refused with
// ErrUnsupportedContent. Pages in legacy charsets (ISO-8859-1,
// Windows-1252, Shift_JIS, …) are decoded to UTF-8.
//
// A caller that uses only the beginning of a page — a summary prompt with
// a budget per source — reads it with ReadUpTo: scripts, styles, SVG and
// comments are dropped by a tokenizer before the page is parsed, only the
// first few budgets' worth of its text is parsed and scored by
// Readability, and the main content is converted to Markdown only up to
// the first paragraph, list item or table row past the budget
// (Page.Partial). The cost of a big page is then bounded by the budget,
// not by the page: a 500 KB article reads in a few milliseconds.
//
// Every fetch goes through the SSRF guard of package search/netguard by
// default: only http and https, only public addresses, checked on the
// address actually dialled and again after every redirect. Self-hosted
// targets are opened explicitly with ReaderConfig.Guard (AllowPrivate, or an
// allow-list). Bodies are capped (Page.Truncated), decompression is bounded
// in size and ratio (ErrCompressionBomb), an optional bound limits the pages
// fetched and converted at once (none by default), and concurrent reads of one URL share a single fetch whose result
// is cached for the Reader's life. Page content is untrusted input: fence
// it before it reaches a prompt.
//
// # Example
//
//	web, err := search.ChainFromEnv(search.HTTPOptions{}) // SEARXNG_URL, TAVILY_API_KEY, BRAVE_API_KEY
//	if err != nil { … }
//	results, err := web.Search(ctx, "raft consensus leader election", search.Options{MaxResults: 5})
//
//	reader, err := search.NewReader(search.ReaderConfig{})
//	defer reader.Close()
//	page, err := reader.Read(ctx, results[0].URL)
//	fmt.Println(page.Title, page.Content)
package search
