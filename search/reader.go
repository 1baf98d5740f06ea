package search

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/deepgraph/deepgraph/internal/httpx"
	"github.com/deepgraph/deepgraph/search/netguard"
)

// Defaults of ReaderConfig.
const (
	DefaultReaderTimeout       = 20 * time.Second
	DefaultReaderMaxBytes      = 5 << 20
	DefaultMaxCompressionRatio = 100
	// DefaultReaderConcurrency is no bound on pages read at once.
	DefaultReaderConcurrency = 0
	DefaultReaderCacheSize   = 256
	DefaultUserAgent         = "Mozilla/5.0 (compatible; deepgraph-reader/1.0; +https://github.com/deepgraph/deepgraph)"
	// maxElemsToParse bounds the documents handed to readability, whose
	// cost grows faster than linearly; bigger ones are converted whole.
	maxElemsToParse = 60000
)

// ReaderConfig configures a Reader. The zero value is a safe default:
// public http(s) destinations only, 20s per page, 5 MiB per body.
type ReaderConfig struct {
	// Guard is the SSRF policy of the Reader's own HTTP client. The zero
	// value admits public addresses only; set Guard.AllowPrivate or
	// Guard.Allow for self-hosted targets (tests against an
	// httptest.Server allow "127.0.0.1").
	Guard netguard.Config
	// HTTPClient replaces the Reader's own guarded client. The Reader then
	// trusts it entirely: SSRF protection and redirect limits are the
	// caller's (build it with netguard unless fetching only trusted URLs).
	HTTPClient *http.Client
	// Timeout bounds one page: connect, redirects, body and conversion.
	// 0 means DefaultReaderTimeout.
	Timeout time.Duration
	// MaxBytes caps the decompressed body read per page; a longer body is
	// cut and the Page marked Truncated. 0 means DefaultReaderMaxBytes.
	MaxBytes int64
	// MaxCompressionRatio fails a compressed body that expands more than
	// this many times (past its first MiB) with ErrCompressionBomb. 0 means
	// DefaultMaxCompressionRatio.
	MaxCompressionRatio float64
	// MaxConcurrency bounds pages fetched and converted at once, by every
	// caller of the Reader together (pages come from many sites: the bound
	// is for memory and CPU); 0 and negative values mean no bound
	// (DefaultReaderConcurrency).
	MaxConcurrency int
	// CacheSize is how many pages (and permanent failures) are remembered
	// by URL; 0 means DefaultReaderCacheSize, negative disables the cache.
	// Concurrent reads of one URL share one fetch either way.
	CacheSize int
	// MaxRetries is the retries after the first attempt on 429/5xx and
	// dropped connections (with Retry-After up to 5s); 0 means 1,
	// negative means none.
	MaxRetries int
	// RetryBackoff is the first wait between attempts; 0 means 500ms.
	RetryBackoff time.Duration
	// UserAgent is sent with every request; "" means DefaultUserAgent.
	UserAgent string
	// Logger receives debug records; nil discards them.
	Logger *slog.Logger
}

// Page is a fetched page's main content.
type Page struct {
	// URL is the page's final address, after redirects.
	URL string `json:"url"`
	// RequestedURL is the address Read was given.
	RequestedURL string `json:"requested_url,omitempty"`
	Title        string `json:"title,omitempty"`
	// Content is the main content as Markdown (HTML pages, with navigation,
	// scripts and styles dropped and links absolute), the text itself
	// (plain text, Markdown) or a fenced JSON block. It is untrusted.
	Content string `json:"content"`
	// ContentType is the media type the content was read as, e.g. "text/html".
	ContentType string `json:"content_type"`
	// Truncated reports that the body exceeded MaxBytes and was cut.
	Truncated bool `json:"truncated,omitempty"`
	// Partial reports that Content holds only the beginning of the main
	// content: ReadUpTo stopped converting once it had the characters
	// asked for.
	Partial   bool      `json:"partial,omitempty"`
	Byline    string    `json:"byline,omitempty"`
	SiteName  string    `json:"site_name,omitempty"`
	Language  string    `json:"language,omitempty"`
	Excerpt   string    `json:"excerpt,omitempty"`
	Published time.Time `json:"published,omitzero"`
	// Cached reports that this read fetched nothing itself: the page came
	// from the Reader's cache, or from a read of the same URL already in
	// flight. It is about this read, so it is not serialised.
	Cached bool `json:"-"`
}

// Reader fetches pages and extracts their main content as Markdown. It is
// safe for concurrent use; concurrent reads of the same URL share one
// fetch, and results are cached by normalised URL for the Reader's life.
type Reader struct {
	client    *http.Client
	ownClient bool
	timeout   time.Duration
	maxBytes  int64
	maxRatio  float64
	userAgent string
	logger    *slog.Logger
	extractor extractor
	slots     chan struct{} // nil: no bound

	mu       sync.Mutex
	inflight map[string]*flight
	cache    *lru // nil when disabled
}

// flight is one fetch that concurrent readers of a URL wait on.
type flight struct {
	done     chan struct{}
	maxChars int // what the starter asked for (0: everything)
	page     *Page
	err      error
	// abandoned: the fetch was stopped by its starter's context, so the
	// outcome says nothing about the URL and waiters try again.
	abandoned bool
}

// NewReader returns a Reader.
func NewReader(cfg ReaderConfig) (*Reader, error) {
	r := &Reader{
		timeout:   orDefault(cfg.Timeout, DefaultReaderTimeout),
		maxBytes:  orDefault(cfg.MaxBytes, DefaultReaderMaxBytes),
		maxRatio:  orDefault(cfg.MaxCompressionRatio, DefaultMaxCompressionRatio),
		userAgent: cfg.UserAgent,
		logger:    cfg.Logger,
		extractor: readabilityExtractor{maxElems: maxElemsToParse},
		inflight:  map[string]*flight{},
	}
	if cfg.MaxConcurrency > 0 {
		r.slots = make(chan struct{}, cfg.MaxConcurrency)
	}
	if r.userAgent == "" {
		r.userAgent = DefaultUserAgent
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	if cfg.CacheSize >= 0 {
		r.cache = newLRU(orDefault(cfg.CacheSize, DefaultReaderCacheSize))
	}
	if cfg.HTTPClient != nil {
		r.client = cfg.HTTPClient
		return r, nil
	}
	g, err := netguard.New(cfg.Guard)
	if err != nil {
		return nil, fmt.Errorf("search: reader: %w", err)
	}
	attempts := 2
	if cfg.MaxRetries > 0 {
		attempts = cfg.MaxRetries + 1
	} else if cfg.MaxRetries < 0 {
		attempts = 1
	}
	retrying := httpx.NewTransport(g.Transport(), httpx.Policy{MaxAttempts: attempts, InitialBackoff: cfg.RetryBackoff, MaxRetryAfter: 5 * time.Second})
	r.client = &http.Client{Transport: g.Wrap(retrying), CheckRedirect: g.CheckRedirect}
	r.ownClient = true
	return r, nil
}

func orDefault[T int | int64 | float64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Close releases the idle connections of the Reader's own client. A
// Reader that was given an HTTPClient leaves it alone.
func (r *Reader) Close() {
	if r.ownClient {
		r.client.CloseIdleConnections()
	}
}

// Read fetches rawURL and returns its main content. Only http and https
// URLs are read; by default only public addresses (see ReaderConfig.Guard).
// Failures name the URL: refusals match netguard.ErrBlocked, non-2xx
// answers are *StatusError, unreadable types match ErrUnsupportedContent.
// A page without extractable text is returned with empty Content, not an
// error. The returned Page is the caller's to modify.
func (r *Reader) Read(ctx context.Context, rawURL string) (*Page, error) {
	return r.ReadUpTo(ctx, rawURL, 0)
}

// ReadUpTo is Read for a caller that uses only the first maxChars
// characters of the content, such as a summary prompt with a fixed budget
// per source: an HTML page's conversion then stops at the first paragraph,
// list item or table row past maxChars, and only the beginning of a big
// page is parsed at all, which makes reading it several times cheaper.
// Content then holds at least maxChars characters when the page has them
// (usually a few more, so a caller that clips at maxChars can tell the
// text goes on), and Page.Partial reports that the main content was longer.
// Other content types are returned whole. maxChars <= 0 means everything,
// as Read. A page read partially is cached for readers asking as much or
// less; one asking more reads the page again.
func (r *Reader) ReadUpTo(ctx context.Context, rawURL string, maxChars int) (*Page, error) {
	maxChars = max(maxChars, 0)
	u, err := parsePageURL(rawURL)
	if err != nil {
		return nil, err
	}
	key := NormalizeURL(u.String())
	for {
		r.mu.Lock()
		if r.cache != nil {
			if e, ok := r.cache.get(key); ok && e.serves(maxChars) {
				r.mu.Unlock()
				return e.cached(rawURL)
			}
		}
		if f, ok := r.inflight[key]; ok {
			r.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return nil, fmt.Errorf("search: reading %s: %w", u.Redacted(), ctx.Err())
			}
			if f.abandoned && ctx.Err() == nil {
				continue // its starter gave up; this caller has not
			}
			e := cacheEntry{page: f.page, err: f.err, maxChars: f.maxChars}
			if !e.serves(maxChars) {
				continue // it read less of the page than this caller needs
			}
			return e.cached(rawURL)
		}
		f := &flight{done: make(chan struct{}), maxChars: maxChars}
		r.inflight[key] = f
		r.mu.Unlock()
		r.lead(ctx, key, u, f)
		return cacheEntry{page: f.page, err: f.err, maxChars: maxChars}.result(rawURL)
	}
}

// lead performs the fetch that f's waiters share, and always releases them.
func (r *Reader) lead(ctx context.Context, key string, u *url.URL, f *flight) {
	defer func() {
		r.mu.Lock()
		delete(r.inflight, key)
		if r.cache != nil && !f.abandoned && cacheable(f.err) {
			// Only a read that the cached entry did not serve leads, and
			// no other read of key leads meanwhile: this outcome is newer
			// and at least as complete.
			r.cache.add(key, cacheEntry{page: f.page, err: f.err, maxChars: f.maxChars})
		}
		r.mu.Unlock()
		close(f.done)
	}()
	f.abandoned = true // until read returns: a panic must not leave a result behind
	f.page, f.err = r.read(ctx, u, f.maxChars)
	f.abandoned = f.err != nil && ctx.Err() != nil
}

// parsePageURL checks that raw is an absolute http(s) URL and drops its
// fragment, which is never sent.
func parsePageURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("search: %q is not a URL: %w", raw, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return nil, fmt.Errorf("search: %q: only http and https URLs can be read: %w", u.Redacted(), netguard.ErrBlocked)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("search: %q has no host: %w", u.Redacted(), ErrBadRequest)
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// read does one fetch under the concurrency bound and the timeout.
func (r *Reader) read(ctx context.Context, u *url.URL, maxChars int) (*Page, error) {
	if r.slots != nil {
		select {
		case r.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("search: reading %s: %w", u.Redacted(), ctx.Err())
		}
		defer func() { <-r.slots }()
	}
	callCtx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	start := time.Now()
	f, err := r.fetch(callCtx, u)
	if err == nil {
		var p *Page
		p, err = r.toPage(callCtx, f, maxChars)
		if err == nil {
			p.URL = f.url.String()
			p.Truncated = f.truncated
			r.logger.DebugContext(ctx, "search: read page", "url", p.URL, "type", p.ContentType,
				"bytes", len(f.body), "truncated", f.truncated, "partial", p.Partial, "took", time.Since(start))
			return p, nil
		}
	}
	if ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("search: reading %s: no complete page within %s (raise the reader timeout): %w", u.Redacted(), r.timeout, err)
	}
	return nil, err
}

// cacheable reports outcomes worth remembering: pages, and failures that a
// second try would repeat (refusals, unreadable types, 4xx answers).
// Timeouts, network errors and 5xx answers may pass and are not kept.
func cacheable(err error) bool {
	if err == nil {
		return true
	}
	if errors.Is(err, netguard.ErrBlocked) || errors.Is(err, ErrUnsupportedContent) || errors.Is(err, ErrCompressionBomb) {
		return true
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status >= 400 && se.Status < 500 && se.Status != http.StatusRequestTimeout && se.Status != http.StatusTooManyRequests
	}
	return false
}

// cacheEntry is a remembered outcome.
type cacheEntry struct {
	page     *Page
	err      error
	maxChars int // what the read asked for (0: everything)
}

// serves reports whether the entry answers a read of maxChars characters
// (0: everything): failures and whole pages answer every read, a partial
// page those asking no more than it was read for.
func (e cacheEntry) serves(maxChars int) bool {
	if e.err != nil || e.page == nil || !e.page.Partial {
		return true
	}
	return maxChars > 0 && e.maxChars > 0 && maxChars <= e.maxChars
}

// result hands out a copy, so callers may modify their Page.
func (e cacheEntry) result(requested string) (*Page, error) {
	if e.err != nil {
		return nil, e.err
	}
	p := *e.page
	p.RequestedURL = requested
	return &p, nil
}

// cached is result for a read that fetched nothing itself (Page.Cached).
func (e cacheEntry) cached(requested string) (*Page, error) {
	p, err := e.result(requested)
	if p != nil {
		p.Cached = true
	}
	return p, err
}

// lru is a small least-recently-used map; the Reader's mutex guards it.
type lru struct {
	max   int
	order *list.List // front: most recent; values are *lruItem
	items map[string]*list.Element
}

type lruItem struct {
	key   string
	entry cacheEntry
}

func newLRU(max int) *lru {
	return &lru{max: max, order: list.New(), items: map[string]*list.Element{}}
}

func (c *lru) get(key string) (cacheEntry, bool) {
	el, ok := c.items[key]
	if !ok {
		return cacheEntry{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruItem).entry, true
}

func (c *lru) add(key string, e cacheEntry) {
	if el, ok := c.items[key]; ok {
		el.Value.(*lruItem).entry = e
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&lruItem{key: key, entry: e})
	for c.order.Len() > c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*lruItem).key)
	}
}
