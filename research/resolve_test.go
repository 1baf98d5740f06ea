package research_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/llm/gemini"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/search/netguard"
)

// hostsResolver is a fake DNS: names resolve to the addresses listed.
type hostsResolver map[string]string

func (h hostsResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := h[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

// redirectWorld is a fake grounding redirect service and the web behind
// it, both on loopback under public-looking names: redirect.test (allowed
// by the guard), pages.test (allowed) and intranet.test (not allowed: a
// loopback address the guard refuses).
type redirectWorld struct {
	redirects, pages, intranet atomic.Int32
	redirectSrv, pageSrv       *httptest.Server
	guard                      netguard.Config
	prefix                     string
	release                    chan struct{} // closed at cleanup: slow handlers return
	// gate holds the answers to "gated-" tokens (gated-tok-a1 is tok-a1)
	// until it is closed, or the request ends: their heads come at once,
	// their bodies end when it closes.
	gate chan struct{}
	// beforeAnswer, when set, runs before resolvingGemini writes an answer.
	beforeAnswer func()
	// delay is how long each redirect and each page takes to answer.
	delay time.Duration
}

func newRedirectWorld(t testing.TB) *redirectWorld {
	w := &redirectWorld{release: make(chan struct{}), gate: make(chan struct{})}
	pages := http.NewServeMux()
	pages.HandleFunc("/article", func(rw http.ResponseWriter, r *http.Request) {
		w.pages.Add(1)
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(rw, "<!doctype html><html><head><meta charset=utf-8>\n<title>\n  Euro 2024 &#8211;\tSpain wins\n</title></head><body><title>not this</title>x</body></html>")
	})
	pages.HandleFunc("/other/", func(rw http.ResponseWriter, r *http.Request) {
		w.pages.Add(1)
		time.Sleep(w.delay)
		rw.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(rw, "<html><head><title>Other page %s</title></head></html>", strings.TrimPrefix(r.URL.Path, "/other/"))
	})
	pages.HandleFunc("/latin1", func(rw http.ResponseWriter, r *http.Request) {
		w.pages.Add(1)
		rw.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
		_, _ = rw.Write([]byte("<title>Caf\xe9 cr\xe8me</title>"))
	})
	pages.HandleFunc("/data.json", func(rw http.ResponseWriter, r *http.Request) {
		w.pages.Add(1)
		rw.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(rw, `{"title": "no"}`)
	})
	pages.HandleFunc("/secret", func(rw http.ResponseWriter, r *http.Request) {
		w.intranet.Add(1)
		_, _ = io.WriteString(rw, "<title>internal admin</title>")
	})
	w.pageSrv = httptest.NewServer(pages)
	pagePort := w.pageSrv.Listener.Addr().(*net.TCPAddr).Port
	at := func(host, path string) string { return fmt.Sprintf("http://%s:%d%s", host, pagePort, path) }

	targets := map[string]string{
		"tok-a1":     at("pages.test", "/article#:~:text=Spain"),
		"tok-a2":     at("pages.test", "/article"),
		"tok-o1":     at("pages.test", "/other/1"),
		"tok-o2":     at("pages.test", "/other/2"),
		"tok-latin":  at("pages.test", "/latin1"),
		"tok-json":   at("pages.test", "/data.json"),
		"tok-secret": at("intranet.test", "/secret"),
		"tok-meta":   "http://169.254.169.254/latest/meta-data/",
	}
	w.redirectSrv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.redirects.Add(1)
		time.Sleep(w.delay)
		tok := strings.TrimPrefix(r.URL.Path, "/grounding-api-redirect/")
		if n, ok := strings.CutPrefix(tok, "uniq-"); ok { // a page of its own
			http.Redirect(rw, r, at("pages.test", "/other/"+n), http.StatusFound)
			return
		}
		if rest, ok := strings.CutPrefix(tok, "gated-"); ok {
			// The redirect's head goes at once, its body when the gate
			// opens: no header timeout cuts the wait short.
			rw.Header().Set("Location", targets[rest])
			rw.WriteHeader(http.StatusFound)
			rw.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-w.gate:
			}
			return
		}
		if strings.HasPrefix(tok, "slow") {
			select {
			case <-r.Context().Done():
			case <-w.release:
			}
			return
		}
		target, ok := targets[tok]
		if !ok {
			http.NotFound(rw, r)
			return
		}
		http.Redirect(rw, r, target, http.StatusFound)
	}))
	t.Cleanup(func() {
		close(w.release)
		w.redirectSrv.Close()
		w.pageSrv.Close()
	})
	w.prefix = fmt.Sprintf("http://redirect.test:%d/grounding-api-redirect/", w.redirectSrv.Listener.Addr().(*net.TCPAddr).Port)
	w.guard = netguard.Config{
		Resolver: hostsResolver{"redirect.test": "127.0.0.1", "pages.test": "127.0.0.1", "intranet.test": "127.0.0.1"},
		Allow:    []string{"redirect.test", "pages.test"},
	}
	return w
}

func (w *redirectWorld) redirect(tok string) string { return w.prefix + tok }

func (w *redirectWorld) page(path string) string {
	return fmt.Sprintf("http://pages.test:%d%s", w.pageSrv.Listener.Addr().(*net.TCPAddr).Port, path)
}

func (w *redirectWorld) resolver(t testing.TB, cfg research.ResolverConfig) *research.SourceResolver {
	t.Helper()
	cfg.Guard, cfg.Prefixes = w.guard, []string{w.prefix}
	r, err := research.NewSourceResolver(cfg)
	require.NoError(t, err)
	t.Cleanup(r.Close)
	return r
}

func TestSourceResolverResolves(t *testing.T) {
	w := newRedirectWorld(t)
	r := w.resolver(t, research.ResolverConfig{})
	got := r.Resolve(context.Background(), []string{
		w.redirect("tok-a1"), w.redirect("tok-a2"), w.redirect("tok-latin"), w.redirect("tok-json"),
		"https://example.com/not-a-redirect", w.redirect("tok-a1"),
	})
	assert.Equal(t, map[string]research.Resolved{
		w.redirect("tok-a1"):    {URL: w.page("/article"), Title: "Euro 2024 – Spain wins"},
		w.redirect("tok-a2"):    {URL: w.page("/article"), Title: "Euro 2024 – Spain wins"},
		w.redirect("tok-latin"): {URL: w.page("/latin1"), Title: "Café crème"},
		w.redirect("tok-json"):  {URL: w.page("/data.json")},
	}, got)
	assert.Equal(t, int32(4), w.redirects.Load(), "each distinct redirect asked once")
	assert.Equal(t, int32(3), w.pages.Load(), "two redirects to one page read it once")
}

// TestSourceResolverRefusesPrivateTargets: a redirect to an address the
// guard refuses is never fetched and not resolved: the source keeps its
// redirect URL.
func TestSourceResolverRefusesPrivateTargets(t *testing.T) {
	w := newRedirectWorld(t)
	r := w.resolver(t, research.ResolverConfig{})
	got := r.Resolve(context.Background(), []string{w.redirect("tok-secret"), w.redirect("tok-meta"), w.redirect("tok-o1")})
	assert.Equal(t, map[string]research.Resolved{w.redirect("tok-o1"): {URL: w.page("/other/1"), Title: "Other page 1"}}, got)
	assert.Equal(t, int32(0), w.intranet.Load(), "the intranet page must never be fetched")

	// The redirect service itself is behind the guard too.
	strict, err := research.NewSourceResolver(research.ResolverConfig{Guard: netguard.Config{Resolver: w.guard.Resolver}, Prefixes: []string{w.prefix}})
	require.NoError(t, err)
	before := w.redirects.Load()
	assert.Empty(t, strict.Resolve(context.Background(), []string{w.redirect("tok-a1")}))
	assert.Equal(t, before, w.redirects.Load(), "a refused redirect service is not asked")
}

// TestSourceResolverBoundedTime: a redirect service that never answers
// costs the per-URL timeout, many of them the overall deadline; they fall
// back, the others resolve.
func TestSourceResolverBoundedTime(t *testing.T) {
	w := newRedirectWorld(t)
	// The slow redirects answer only when the client gives up (or at the
	// cleanup): Resolve returns only because the bounds cut them off.
	t.Run("per URL", func(t *testing.T) {
		r := w.resolver(t, research.ResolverConfig{Timeout: 100 * time.Millisecond})
		got := r.Resolve(context.Background(), []string{w.redirect("slow-1"), w.redirect("tok-o2")})
		assert.Equal(t, map[string]research.Resolved{w.redirect("tok-o2"): {URL: w.page("/other/2"), Title: "Other page 2"}}, got)
	})
	t.Run("overall", func(t *testing.T) {
		r := w.resolver(t, research.ResolverConfig{Timeout: time.Minute, Deadline: 150 * time.Millisecond, MaxConcurrency: 1})
		got := r.Resolve(context.Background(), []string{w.redirect("slow-1"), w.redirect("slow-2"), w.redirect("slow-3")})
		assert.Empty(t, got)
	})
	t.Run("caller's context", func(t *testing.T) {
		r := w.resolver(t, research.ResolverConfig{Timeout: time.Minute, Deadline: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		assert.Empty(t, r.Resolve(ctx, []string{w.redirect("slow-4")}))
	})
}

// TestSourceResolverCache: a resolved redirect is not asked again, a page
// whose title is known is not read again; a failure that may pass is not
// remembered.
func TestSourceResolverCache(t *testing.T) {
	w := newRedirectWorld(t)
	r := w.resolver(t, research.ResolverConfig{})
	first := r.Resolve(context.Background(), []string{w.redirect("tok-a1"), w.redirect("tok-secret")})
	require.Len(t, first, 1)
	redirects, pages := w.redirects.Load(), w.pages.Load()
	require.Equal(t, int32(2), redirects)
	require.Equal(t, int32(1), pages)

	again := r.Resolve(context.Background(), []string{w.redirect("tok-a1"), w.redirect("tok-secret")})
	assert.Equal(t, first, again)
	assert.Equal(t, redirects, w.redirects.Load(), "a cache hit asks the redirect service nothing")
	assert.Equal(t, pages, w.pages.Load(), "a cache hit reads no page")

	// A new redirect to a known page: the redirect is asked, the page not.
	got := r.Resolve(context.Background(), []string{w.redirect("tok-a2")})
	assert.Equal(t, first[w.redirect("tok-a1")], got[w.redirect("tok-a2")])
	assert.Equal(t, redirects+1, w.redirects.Load())
	assert.Equal(t, pages, w.pages.Load())

	// Bounded: with room for one entry, the older redirect is forgotten.
	small := w.resolver(t, research.ResolverConfig{CacheSize: 1})
	small.Resolve(context.Background(), []string{w.redirect("tok-o1")})
	small.Resolve(context.Background(), []string{w.redirect("tok-o2")})
	n := w.redirects.Load()
	small.Resolve(context.Background(), []string{w.redirect("tok-o1")})
	assert.Equal(t, n+1, w.redirects.Load(), "the LRU holds one redirect")
}

// groundedTwice is a Gemini reply whose two sentences cite the same page
// through two redirect tokens, and a third sentence a private page.
func groundedTwice(w *redirectWorld) fake.Reply {
	s1, s2, s3 := "Spain won.", " In Berlin.", " Admin says hi."
	text := s1 + s2 + s3
	return fake.Text(text).When(fake.Contains("Google Search")).WithGrounding(&llm.Grounding{
		Chunks: []llm.GroundingChunk{
			{URI: w.redirect("tok-a1"), Title: "uefa.com"},
			{URI: w.redirect("tok-a2"), Title: "uefa.com"},
			{URI: w.redirect("tok-secret"), Title: "intranet.corp"},
		},
		Supports: []llm.GroundingSupport{
			{EndIndex: len(s1), ChunkIndices: []int{0}},
			{StartIndex: len(s1), EndIndex: len(s1 + s2), ChunkIndices: []int{1}},
			{StartIndex: len(s1 + s2), EndIndex: len(text), ChunkIndices: []int{2}},
		},
	})
}

// TestGeminiBackendResolvesSources: two redirect tokens of one page are one
// source, with the real URL, the page's title and both redirects; the
// summary cites it under one short URL. A redirect to a private page keeps
// its redirect URL.
func TestGeminiBackendResolvesSources(t *testing.T) {
	w := newRedirectWorld(t)
	b := research.GeminiBackend{Resolver: w.resolver(t, research.ResolverConfig{})}
	f, err := b.Research(context.Background(), fake.New(groundedTwice(w)), research.Query{Text: "euro", ID: 4})
	require.NoError(t, err)
	require.Len(t, f.Sources, 2)
	assert.Equal(t, w.page("/article"), f.Sources[0].URL)
	assert.Equal(t, "Euro 2024 – Spain wins", f.Sources[0].Title)
	assert.Equal(t, "uefa", f.Sources[0].Label, "the label stays the site's name")
	assert.Equal(t, []string{w.redirect("tok-a1"), w.redirect("tok-a2")}, f.Sources[0].Redirects)
	assert.Equal(t, w.redirect("tok-secret"), f.Sources[1].URL, "a refused target falls back to the redirect")
	assert.Equal(t, "intranet.corp", f.Sources[1].Title)
	assert.Equal(t, int32(0), w.intranet.Load())
	short := f.Sources[0].ShortURL
	assert.Equal(t, 2, strings.Count(f.Summary, "("+short+")"), f.Summary)
	assert.Equal(t, "Spain won. [uefa]("+short+") In Berlin. [uefa]("+short+") Admin says hi. [intranet](https://vertexaisearch.cloud.google.com/id/4-2)", f.Summary)

	// KeepRedirects: the sources as Gemini gave them, nothing fetched.
	n := w.redirects.Load()
	kept := research.GeminiBackend{KeepRedirects: true, Resolver: b.Resolver}
	f, err = kept.Research(context.Background(), fake.New(groundedTwice(w)), research.Query{Text: "euro", ID: 4})
	require.NoError(t, err)
	require.Len(t, f.Sources, 3)
	assert.Equal(t, w.redirect("tok-a1"), f.Sources[0].URL)
	assert.Equal(t, "uefa.com", f.Sources[0].Title)
	assert.Equal(t, n, w.redirects.Load())
}

// resolvingGemini is a fake Gemini REST server for a whole run: three
// queries; q1 and q2 are each grounded in the same article through a
// redirect token of their own and in a page of their own, q3 in the
// same pages through q1's tokens; the answer cites every marker it was
// shown, and the first redirect URL itself.
func resolvingGemini(w *redirectWorld) http.HandlerFunc {
	search := func(prompt string) (string, map[string]any) {
		n := "1"
		if strings.Contains(prompt, `"q2"`) {
			n = "2"
		}
		s1, s2 := "Spain won the final "+n+".", " Other fact "+n+"."
		text := s1 + s2
		return text, map[string]any{
			"groundingChunks": []any{
				map[string]any{"web": map[string]any{"uri": w.redirect("tok-a" + n), "title": "uefa.com"}},
				map[string]any{"web": map[string]any{"uri": w.redirect("tok-o" + n), "title": "pages.test"}},
			},
			"groundingSupports": []any{
				map[string]any{"segment": map[string]any{"endIndex": len(s1)}, "groundingChunkIndices": []int{0}},
				map[string]any{"segment": map[string]any{"startIndex": len(s1), "endIndex": len(text)}, "groundingChunkIndices": []int{1}},
			},
		}
	}
	answer := func(prompt string) string {
		if w.beforeAnswer != nil {
			w.beforeAnswer()
		}
		return "Antwort " + strings.Join(markerRe.FindAllString(prompt, -1), " ") + " [direct](" + w.redirect("tok-a1") + ")"
	}
	return func(rw http.ResponseWriter, r *http.Request) { serveGeminiWire(rw, r, search, answer) }
}

// TestGeminiRunShowsResolvedSources: through the Gemini wire protocol, the
// report's Sources list shows the real URLs and page titles, each page
// once, and no redirect URL is left in the report.
func TestGeminiRunShowsResolvedSources(t *testing.T) {
	w := newRedirectWorld(t)
	srv := httptest.NewServer(resolvingGemini(w))
	defer srv.Close()
	model, err := gemini.New(context.Background(), gemini.Config{APIKey: "test-key", BaseURL: srv.URL + "/", Client: llm.ClientConfig{HTTPClient: srv.Client(), MaxRetries: -1}})
	require.NoError(t, err)
	res := w.resolver(t, research.ResolverConfig{})
	r := newResearcher(t, model, research.GeminiBackend{Resolver: res}, research.Config{})
	// The redirects are resolved while the run goes on; here the answer
	// waits for them, as a real one, seconds long, outlasts them.
	w.beforeAnswer = func() {
		<-res.Prefetch([]string{w.redirect("tok-a1"), w.redirect("tok-a2"), w.redirect("tok-o1"), w.redirect("tok-o2")})
	}

	rep, err := r.Run(context.Background(), "Wer gewann?")
	require.NoError(t, err)
	md := rep.Markdown()
	assert.Contains(t, md, "## Sources\n\n"+
		"1. [Euro 2024 – Spain wins]("+w.page("/article")+")\n"+
		"2. [Other page 1]("+w.page("/other/1")+")\n"+
		"3. [Other page 2]("+w.page("/other/2")+")\n", md)
	assert.NotContains(t, md, "grounding-api-redirect")
	assert.Equal(t, "Antwort [1]("+w.page("/article")+") [2]("+w.page("/other/1")+") [1]("+w.page("/article")+") [3]("+w.page("/other/2")+") [1]("+w.page("/article")+") [2]("+w.page("/other/1")+") direct [1]("+w.page("/article")+")", rep.Answer, "a prose link keeps its words (issue 23, N10)")
	assert.Equal(t, 0, rep.Dropped, "the redirect URL counts as gathered")
	assert.Equal(t, 3, rep.Gathered)
	assert.Equal(t, int32(3), w.pages.Load(), "the article was read once for both queries")

	// A second run on the same Researcher resolves from the cache.
	redirects, pages := w.redirects.Load(), w.pages.Load()
	_, err = r.Run(context.Background(), "Wer gewann wirklich?")
	require.NoError(t, err)
	assert.Equal(t, redirects, w.redirects.Load())
	assert.Equal(t, pages, w.pages.Load())
}

// gatedGemini is resolvingGemini with every redirect token gated.
func gatedGemini(w *redirectWorld) http.HandlerFunc {
	search := func(prompt string) (string, map[string]any) {
		text := "Spain won the final."
		return text, map[string]any{
			"groundingChunks": []any{
				map[string]any{"web": map[string]any{"uri": w.redirect("gated-tok-a1"), "title": "uefa.com"}},
			},
			"groundingSupports": []any{
				map[string]any{"segment": map[string]any{"endIndex": len(text)}, "groundingChunkIndices": []int{0}},
			},
		}
	}
	answer := func(prompt string) string {
		return "Antwort " + strings.Join(markerRe.FindAllString(prompt, -1), " ")
	}
	return func(rw http.ResponseWriter, r *http.Request) { serveGeminiWire(rw, r, search, answer) }
}

// TestGeminiRunDoesNotWaitForRedirects: a redirect service that does not
// answer does not hold a run up — the run answers while every redirect
// request waits, citing the redirect URLs (valid links, the page they lead
// to). Once the service answers, the resolutions started in the background
// complete, and the next run on the Researcher shows the real pages from
// the resolver's memory without asking the service again.
func TestGeminiRunDoesNotWaitForRedirects(t *testing.T) {
	w := newRedirectWorld(t)
	opened := sync.OnceFunc(func() { close(w.gate) })
	defer opened() // a failing test lets the gated requests go, to end
	srv := httptest.NewServer(gatedGemini(w))
	defer srv.Close()
	model, err := gemini.New(context.Background(), gemini.Config{APIKey: "test-key", BaseURL: srv.URL + "/", Client: llm.ClientConfig{HTTPClient: srv.Client(), MaxRetries: -1}})
	require.NoError(t, err)
	// Bounds far beyond the test's: a run that waited for the redirects
	// would not end before the gate opens.
	res := w.resolver(t, research.ResolverConfig{Timeout: time.Hour, Deadline: time.Hour})
	r := newResearcher(t, model, research.GeminiBackend{Resolver: res}, research.Config{})

	type result struct {
		rep *research.Report
		err error
	}
	ran := make(chan result, 1)
	go func() {
		rep, err := r.Run(context.Background(), "Wer gewann?")
		ran <- result{rep, err}
	}()
	var first result
	select {
	case first = <-ran:
	case <-time.After(time.Minute): // a deadlock guard, not a measure
		t.Fatal("the run waited for the redirect service, which answers only when the gate opens")
	}
	require.NoError(t, first.err)
	redirect := w.redirect("gated-tok-a1")
	assert.Equal(t, "Antwort [1]("+redirect+")", first.rep.Answer, "the answer cites the redirect it could not resolve yet")
	require.Len(t, first.rep.Sources, 1)
	assert.Equal(t, redirect, first.rep.Sources[0].URL)
	assert.Zero(t, w.pages.Load(), "no page was read: the redirect has not answered")

	opened()
	<-res.Prefetch([]string{redirect}) // the run's background resolution ends
	got, ok := res.Lookup(redirect)
	require.True(t, ok, "the redirect is resolved and remembered")
	assert.Equal(t, w.page("/article"), got.URL)

	redirects := w.redirects.Load()
	rep, err := r.Run(context.Background(), "Wer gewann wirklich?")
	require.NoError(t, err)
	assert.Equal(t, "Antwort [1]("+w.page("/article")+")", rep.Answer, "the next run shows the real page")
	require.Len(t, rep.Sources, 1)
	assert.Equal(t, "Euro 2024 – Spain wins", rep.Sources[0].Title)
	assert.Equal(t, redirects, w.redirects.Load(), "from the resolver's memory")
}

// TestSourceResolverPrefetch: Prefetch returns at once and resolves in the
// background; a second Prefetch of a redirect being resolved starts
// nothing and waits for the first; Lookup never waits; Close stops what is
// still running.
func TestSourceResolverPrefetch(t *testing.T) {
	w := newRedirectWorld(t)
	res := w.resolver(t, research.ResolverConfig{Timeout: time.Hour, Deadline: time.Hour})
	gated := w.redirect("gated-tok-o1")
	first := res.Prefetch([]string{gated, "https://example.com/not-a-redirect"})
	second := res.Prefetch([]string{gated})
	_, ok := res.Lookup(gated)
	assert.False(t, ok, "not resolved yet, and Lookup does not wait")
	close(w.gate)
	<-first
	<-second
	got, ok := res.Lookup(gated)
	require.True(t, ok)
	assert.Equal(t, research.Resolved{URL: w.page("/other/1"), Title: "Other page 1"}, got)
	assert.Equal(t, int32(1), w.redirects.Load(), "resolved once")
	<-res.Prefetch([]string{gated}) // remembered: nothing to do

	// Close ends a resolution in progress.
	stuck := w.resolver(t, research.ResolverConfig{Timeout: time.Hour, Deadline: time.Hour})
	done := stuck.Prefetch([]string{w.redirect("slow-1")})
	stuck.Close()
	<-done
	_, ok = stuck.Lookup(w.redirect("slow-1"))
	assert.False(t, ok)
	<-stuck.Prefetch([]string{w.redirect("tok-a1")}) // after Close: nothing starts
	assert.Zero(t, w.pages.Load()-1, "only other/1 was read")
}
