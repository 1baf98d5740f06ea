package research

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/search/netguard"
)

// GroundingRedirectPrefix starts the URLs Gemini's grounding metadata gives
// for its sources: redirects to the real pages, about 130 characters long.
const GroundingRedirectPrefix = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/"

// Defaults of ResolverConfig.
const (
	DefaultResolveTimeout     = 4 * time.Second
	DefaultResolveDeadline    = 8 * time.Second
	DefaultResolveConcurrency = 8
	DefaultResolveCacheSize   = 4096
	DefaultTitleBytes         = 64 << 10
	// maxTitleRunes caps a page title taken from a page.
	maxTitleRunes = 200
)

// ResolverConfig configures a SourceResolver. The zero value is the
// default: public addresses only, the grounding redirects of Gemini, 4 s per
// URL and 8 s per reply, 8 requests at a time, 4096 URLs remembered, the
// first 64 KiB of a page searched for its <title>.
type ResolverConfig struct {
	// Guard is the SSRF policy of the resolver's HTTP client — give it the
	// page reader's (search.ReaderConfig.Guard). The zero value admits
	// public addresses only.
	Guard netguard.Config
	// Prefixes are the URL prefixes that are resolved; nil means
	// GroundingRedirectPrefix. Other URLs are left as they are.
	Prefixes []string
	// Timeout bounds the resolution of one redirect and the reading of one
	// title; 0 means DefaultResolveTimeout.
	Timeout time.Duration
	// Deadline bounds one Resolve call, all its URLs together; 0 means
	// DefaultResolveDeadline.
	Deadline time.Duration
	// MaxConcurrency bounds the requests in flight per Resolve call; 0
	// means DefaultResolveConcurrency.
	MaxConcurrency int
	// CacheSize is how many redirects (and as many page titles) are
	// remembered; 0 means DefaultResolveCacheSize, negative disables the
	// cache.
	CacheSize int
	// TitleBytes is how much of a page is read looking for its <title>; 0
	// means DefaultTitleBytes, negative means titles are not read (the real
	// URL only).
	TitleBytes int64
	// UserAgent is sent with every request; "" means the page reader's
	// default.
	UserAgent string
	// Logger receives debug records of failed resolutions; nil discards
	// them.
	Logger *slog.Logger
}

// Resolved is where a redirect leads.
type Resolved struct {
	// URL is the real page's URL: the redirect's target, or the final URL
	// of the page when its title was read.
	URL string
	// Title is the page's <title>, one line, untrusted; "" when it was not
	// read (not HTML, too slow, no title).
	Title string
}

// SourceResolver turns redirect URLs — Gemini's grounding redirects — into
// the URLs and titles of the pages they lead to. Every request goes through
// the SSRF guard: the redirect itself, its target (checked before it is
// fetched or shown) and every redirect of the target. It reads the
// redirect's Location without following it, then the first TitleBytes of
// the target for its <title>. Resolutions are bounded in time (per URL and
// per call) and in parallelism, and remembered (bounded LRU) for the
// resolver's life. It is safe for concurrent use.
type SourceResolver struct {
	guard      *netguard.Guard
	hop        *http.Client // does not follow redirects
	page       *http.Client // follows redirects, each checked by the guard
	prefixes   []string
	timeout    time.Duration
	deadline   time.Duration
	slots      int
	titleBytes int64
	userAgent  string
	logger     *slog.Logger

	targets *lru[string, hopResult] // redirect → target; nil: no cache
	pages   *lru[string, Resolved]  // target → page; nil: no cache

	mu      sync.Mutex
	active  int                    // Resolve calls in flight
	reading map[string]*pageFlight // target → the read in progress
	// prefetching are the redirects Prefetch is resolving; bgCtx ends
	// at Close, which waits for bg.
	prefetching map[string]chan struct{} // closed when resolved
	bgCtx       context.Context
	bgCancel    context.CancelFunc
	bg          sync.WaitGroup
}

// pageFlight is a page read that concurrent Resolve calls share.
type pageFlight struct {
	done chan struct{}
	res  Resolved
}

// hopResult is the outcome of one redirect: its target, or a permanent
// refusal (the guard refused the target, or the redirect is not one).
type hopResult struct {
	target  string
	refused bool
}

// NewSourceResolver returns a SourceResolver. It fails on a Guard allow-list
// entry it cannot parse.
func NewSourceResolver(cfg ResolverConfig) (*SourceResolver, error) {
	g, err := netguard.New(cfg.Guard)
	if err != nil {
		return nil, fmt.Errorf("research: source resolver: %w", err)
	}
	transport := g.Wrap(g.Transport())
	r := &SourceResolver{
		guard: g,
		hop: &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
		page:       &http.Client{Transport: transport, CheckRedirect: g.CheckRedirect},
		prefixes:   cfg.Prefixes,
		timeout:    positive(cfg.Timeout, DefaultResolveTimeout),
		deadline:   positive(cfg.Deadline, DefaultResolveDeadline),
		slots:      positive(cfg.MaxConcurrency, DefaultResolveConcurrency),
		titleBytes: positive(cfg.TitleBytes, DefaultTitleBytes),
		userAgent:  cfg.UserAgent,
		logger:     cfg.Logger,
		reading:    map[string]*pageFlight{},

		prefetching: map[string]chan struct{}{},
	}
	r.bgCtx, r.bgCancel = context.WithCancel(context.Background())
	if cfg.TitleBytes < 0 {
		r.titleBytes = 0
	}
	if r.prefixes == nil {
		r.prefixes = []string{GroundingRedirectPrefix}
	}
	if r.userAgent == "" {
		r.userAgent = "Mozilla/5.0 (compatible; deepgraph-reader/1.0; +https://github.com/deepgraph/deepgraph)"
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	if cfg.CacheSize >= 0 {
		n := positive(cfg.CacheSize, DefaultResolveCacheSize)
		r.targets, r.pages = newLRU[string, hopResult](n), newLRU[string, Resolved](n)
	}
	return r, nil
}

func positive[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// Close stops the resolutions Prefetch started, waits for them to end, and
// releases idle connections. Resolve still works after it; Prefetch does
// nothing.
func (r *SourceResolver) Close() {
	r.mu.Lock() // Prefetch adds to bg under it, if bgCtx has not ended
	r.bgCancel()
	r.mu.Unlock()
	r.bg.Wait()
	r.page.CloseIdleConnections()
}

// IsRedirect reports whether raw is a URL the resolver resolves: it starts
// with one of the configured prefixes.
func (r *SourceResolver) IsRedirect(raw string) bool {
	for _, p := range r.prefixes {
		if strings.HasPrefix(raw, p) && len(raw) > len(p) {
			return true
		}
	}
	return false
}

// Resolve resolves the redirects among urls, in parallel, within the
// resolver's deadline (or the caller's, if sooner). The map has an entry
// for each redirect that was resolved; a URL that is not a redirect, whose
// target the guard refuses, or that did not answer in time has none, and
// the caller keeps it as it is. The call's goroutines end before it
// returns, and idle connections are closed when no other call is running.
func (r *SourceResolver) Resolve(caller context.Context, urls []string) map[string]Resolved {
	var redirects []string
	seen := map[string]bool{}
	for _, u := range urls {
		if r.IsRedirect(u) && !seen[u] {
			seen[u] = true
			redirects = append(redirects, u)
		}
	}
	out := map[string]Resolved{}
	if len(redirects) == 0 {
		return out
	}
	r.mu.Lock()
	r.active++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.active--
		last := r.active == 0
		r.mu.Unlock()
		if last {
			// Keep-alive connections would keep goroutines running after
			// the call; reuse within a call is what matters.
			r.page.CloseIdleConnections()
		}
	}()
	// The requests run under a context of their own that ends when the
	// caller's does: a connection the transport is still dialing when the
	// call returns must not keep the caller's context, whose values are
	// the caller's to change.
	ctx, cancel := context.WithTimeout(context.Background(), r.deadline)
	defer cancel()
	stop := context.AfterFunc(caller, cancel)
	defer stop()

	// The redirects' targets, then the pages of the distinct targets: two
	// redirects to one page read it once.
	targets := make([]string, len(redirects))
	r.parallel(ctx, len(redirects), func(ctx context.Context, i int) {
		targets[i] = r.target(ctx, redirects[i])
	})
	var distinct []string
	pageOf := map[string]Resolved{}
	for _, t := range targets {
		if _, ok := pageOf[t]; t != "" && !ok {
			pageOf[t] = Resolved{URL: t}
			distinct = append(distinct, t)
		}
	}
	pages := make([]Resolved, len(distinct))
	r.parallel(ctx, len(distinct), func(ctx context.Context, i int) {
		pages[i] = r.readPage(ctx, distinct[i])
	})
	for i, t := range distinct {
		pageOf[t] = pages[i]
	}
	for i, red := range redirects {
		if targets[i] != "" {
			out[red] = pageOf[targets[i]]
		}
	}
	return out
}

// parallel runs f for 0..n-1, at most r.slots at a time, each under the
// per-URL timeout, and waits for all of them.
func (r *SourceResolver) parallel(ctx context.Context, n int, f func(ctx context.Context, i int)) {
	sem := make(chan struct{}, r.slots)
	var wg sync.WaitGroup
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			uctx, cancel := context.WithTimeout(ctx, r.timeout)
			defer cancel()
			f(uctx, i)
		}()
	}
	wg.Wait()
}

// target returns where redirect leads, or "" when it cannot be resolved.
func (r *SourceResolver) target(ctx context.Context, redirect string) string {
	if hr, ok := r.targets.get(redirect); ok {
		if hr.refused {
			return ""
		}
		return hr.target
	}
	t, err := r.hopOnce(ctx, redirect)
	if err != nil {
		permanent := errors.Is(err, netguard.ErrBlocked) || errors.Is(err, errNotRedirect)
		r.logger.DebugContext(ctx, "a grounding redirect was not resolved; the source keeps its redirect URL", "url", redirect, "err", err)
		if permanent {
			r.targets.add(redirect, hopResult{refused: true})
		}
		return ""
	}
	r.targets.add(redirect, hopResult{target: t})
	return t
}

var errNotRedirect = errors.New("the answer is not a redirect")

// hopOnce asks redirect for its Location without following it, and checks
// the target with the guard.
func (r *SourceResolver) hopOnce(ctx context.Context, redirect string) (string, error) {
	resp, err := r.get(ctx, r.hop, redirect)
	if err != nil {
		return "", err
	}
	loc, lerr := resp.Location()
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	resp.Body.Close()
	if resp.StatusCode < 300 || resp.StatusCode > 399 || lerr != nil {
		return "", fmt.Errorf("%w: %s answered %d", errNotRedirect, redirect, resp.StatusCode)
	}
	loc.Fragment, loc.RawFragment = cleanFragment(loc.Fragment), ""
	if err := r.guard.CheckURL(ctx, loc); err != nil {
		return "", err
	}
	return loc.String(), nil
}

// readPage returns target's page: remembered, being read by another
// Resolve call (whose result it shares), or read now.
func (r *SourceResolver) readPage(ctx context.Context, target string) Resolved {
	if p, ok := r.pages.get(target); ok {
		return p
	}
	r.mu.Lock()
	if f, ok := r.reading[target]; ok {
		r.mu.Unlock()
		select {
		case <-f.done:
			return f.res
		case <-ctx.Done():
			return Resolved{URL: target}
		}
	}
	f := &pageFlight{done: make(chan struct{})}
	r.reading[target] = f
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.reading, target)
		r.mu.Unlock()
		close(f.done)
	}()
	f.res = r.fetchTitle(ctx, target)
	return f.res
}

// fetchTitle reads the start of target for its title. The page's final
// URL (after its own redirects) replaces target when it answered 2xx.
func (r *SourceResolver) fetchTitle(ctx context.Context, target string) Resolved {
	res := Resolved{URL: target}
	if r.titleBytes == 0 {
		return res
	}
	resp, err := r.get(ctx, r.page, target)
	if err != nil {
		r.logger.DebugContext(ctx, "reading a source's title failed; it keeps the search engine's", "url", target, "err", err)
		return res
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return res
	}
	if u := resp.Request.URL; u != nil {
		final := *u
		final.Fragment, final.RawFragment = cleanFragment(final.Fragment), ""
		res.URL = final.String()
	}
	ct := resp.Header.Get("Content-Type")
	if mt, _, _ := mime.ParseMediaType(ct); mt != "text/html" && mt != "application/xhtml+xml" {
		r.pages.add(target, res)
		return res
	}
	head, err := io.ReadAll(io.LimitReader(resp.Body, r.titleBytes))
	if err != nil && len(head) == 0 {
		return res // cut off: maybe next time
	}
	res.Title = pageTitle(head, ct)
	r.pages.add(target, res)
	return res
}

func (r *SourceResolver) get(ctx context.Context, c *http.Client, raw string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", r.userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5")
	return c.Do(req)
}

// cleanFragment drops a text fragment ("#:~:text=…", a highlight the
// search engine adds), which would make one page look like several.
func cleanFragment(f string) string {
	if i := strings.Index(f, ":~:"); i >= 0 {
		return f[:i]
	}
	return f
}

// pageTitle returns the text of the first <title> in head (the start of an
// HTML page), decoded to UTF-8, on one line and at most maxTitleRunes long;
// "" when there is none before the body starts.
func pageTitle(head []byte, contentType string) string {
	enc, _, _ := charset.DetermineEncoding(head, contentType)
	if dec, err := enc.NewDecoder().Bytes(head); err == nil {
		head = dec
	}
	z := html.NewTokenizer(bytes.NewReader(head))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "title":
				// The tokenizer reads <title> as raw text up to </title>.
				if z.Next() != html.TextToken {
					return ""
				}
				return cleanTitle(string(z.Text()))
			case "body":
				return ""
			}
		}
	}
}

// cleanTitle puts untrusted title text on one line: control characters
// and runs of spaces become one space, invalid UTF-8 goes, and the result
// is cut at maxTitleRunes.
func cleanTitle(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= maxTitleRunes {
		return s
	}
	n := 0
	for i := range s {
		if n == maxTitleRunes {
			return strings.TrimSpace(s[:i]) + "…"
		}
		n++
	}
	return s
}

// lru is a bounded map that forgets the least recently used entry. A nil
// *lru remembers nothing. It is safe for concurrent use.
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	order *list.List // front: most recent; values are *lruEntry
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, order: list.New(), items: map[K]*list.Element{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	var zero V
	if c == nil {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok {
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry[K, V]).val, true
}

func (c *lru[K, V]) add(k K, v V) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		e.Value.(*lruEntry[K, V]).val = v
		c.order.MoveToFront(e)
		return
	}
	c.items[k] = c.order.PushFront(&lruEntry[K, V]{key: k, val: v})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*lruEntry[K, V]).key)
	}
}

// ground is citation.Ground with the grounding redirects resolved: each
// chunk whose URI the resolver resolves is cited by the real page's URL,
// the sources show the page's title when it was read (their labels stay
// the search engine's, the site name), the same page reached through
// several redirects is one source under one short URL, and each source
// lists the redirects it came from (citation.Source.Redirects), which
// count as gathered. Unresolved chunks keep their redirect URL. With
// KeepRedirects or no Resolver it is citation.Ground. Under a Researcher's
// run (deferredSources) it does not wait: it uses what the resolver knows
// now and resolves the rest in the background, for FinishSources.
func (b GeminiBackend) ground(ctx context.Context, resp *llm.Response, queryID int) (string, []citation.Source) {
	opts := citation.Options{ReferenceLabels: b.ReferenceLabels}
	if b.KeepRedirects || b.Resolver == nil || resp == nil || resp.Grounding == nil || len(resp.Grounding.Chunks) == 0 {
		return citation.Ground(resp, queryID, opts)
	}
	g := resp.Grounding
	uris := make([]string, len(g.Chunks))
	for i, c := range g.Chunks {
		uris[i] = c.URI
	}
	var resolved map[string]Resolved
	if deferredSources(ctx) {
		// The run finishes its sources when it answers (FinishSources):
		// what is not known now is resolved meanwhile.
		b.Resolver.Prefetch(uris)
		resolved = b.Resolver.known(uris)
	} else {
		resolved = b.Resolver.Resolve(ctx, uris)
	}
	if len(resolved) == 0 {
		return citation.Ground(resp, queryID, opts)
	}
	chunks := slices.Clone(g.Chunks)
	via := map[string][]string{} // real URL → the redirects that led there
	titles := map[string]string{}
	for i, c := range chunks {
		r, ok := resolved[c.URI]
		if !ok {
			continue
		}
		if !slices.Contains(via[r.URL], c.URI) {
			via[r.URL] = append(via[r.URL], c.URI)
		}
		if r.Title != "" {
			titles[r.URL] = r.Title
		}
		chunks[i].URI = r.URL
	}
	gc := *g
	gc.Chunks = chunks
	rc := *resp
	rc.Grounding = &gc
	text, sources := citation.Ground(&rc, queryID, opts)

	var out []citation.Source
	seen := map[string]bool{}
	for _, s := range sources {
		if seen[s.URL] {
			continue
		}
		seen[s.URL] = true
		if t := titles[s.URL]; t != "" {
			s.Title = t
		}
		s.Redirects = slices.Clone(via[s.URL])
		out = append(out, s)
	}
	return text, out
}

// withSourceResolver gives a GeminiBackend without a Resolver its own
// (the zero ResolverConfig: public addresses only), so that each
// Researcher resolves and remembers its grounding redirects. Other back
// ends, and a GeminiBackend with KeepRedirects or a Resolver, are returned
// as they are.
func withSourceResolver(b Backend) Backend {
	switch gb := b.(type) {
	case GeminiBackend:
		if gb.KeepRedirects || gb.Resolver != nil {
			return b
		}
		res, err := NewSourceResolver(ResolverConfig{})
		if err != nil {
			return b // unreachable: the zero config has no allow-list to misread
		}
		gb.Resolver = res
		return gb
	case *GeminiBackend:
		if gb == nil {
			return b
		}
		c := withSourceResolver(*gb).(GeminiBackend)
		return &c
	}
	return b
}
