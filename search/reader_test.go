package search

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/unicode"

	"github.com/deepgraph/deepgraph/search/netguard"
)

// newTestReader returns a Reader allowed to reach httptest servers (which
// listen on 127.0.0.1) and nothing else private.
func newTestReader(t *testing.T, cfg ReaderConfig) *Reader {
	t.Helper()
	if cfg.Guard.Allow == nil && !cfg.Guard.AllowPrivate {
		cfg.Guard.Allow = []string{"127.0.0.1"}
	}
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = time.Millisecond
	}
	r, err := NewReader(cfg)
	require.NoError(t, err)
	t.Cleanup(r.Close)
	return r
}

// site serves fixed responses by path and counts requests per path.
type site struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
	last http.Header
}

type page struct {
	contentType string
	encoding    string // Content-Encoding
	body        []byte
	status      int
	header      map[string]string
}

func newSite(t *testing.T, pages map[string]page) *site {
	t.Helper()
	s := &site{hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.last = r.Header.Clone()
		s.mu.Unlock()
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		for k, v := range p.header {
			w.Header().Set(k, v)
		}
		if p.contentType != "" {
			w.Header().Set("Content-Type", p.contentType)
		} else {
			w.Header()["Content-Type"] = nil // no sniffing by net/http either
		}
		if p.encoding != "" {
			w.Header().Set("Content-Encoding", p.encoding)
		}
		if p.status != 0 {
			w.WriteHeader(p.status)
		}
		_, _ = w.Write(p.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

const articleHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Raft in Practice | Distributed Notes</title>
<meta name="author" content="Ada Lovelace">
<meta property="article:published_time" content="2025-02-03T10:00:00Z">
<style>.x{color:red}</style><script>var secret = "tracking-script-body";</script></head>
<body>
<nav><a href="/">Home</a> | <a href="/archive">Archive</a></nav>
<article>
<h1>Raft in Practice</h1>
<p>Raft is a consensus algorithm designed to be easy to understand. It is equivalent to Paxos in
fault-tolerance and performance. The difference is that it is decomposed into relatively independent
subproblems, and it cleanly addresses all major pieces needed for practical systems.</p>
<p>Leader election happens when a follower hears nothing from a leader for an election timeout.
Read <a href="/papers/raft.pdf">the paper</a>, the <a href="https://raft.github.io/">Raft site</a>,
or <a href="javascript:steal()">click here</a>. Log replication then keeps followers in step.</p>
<table><thead><tr><th>Term</th><th>Leader</th></tr></thead><tbody><tr><td>1</td><td>S1</td></tr><tr><td>2</td><td>S3</td></tr></tbody></table>
<p><img src="/img/states.png" alt="server states"><img src="data:image/png;base64,iVBORw0KGgo=" alt="pixel"></p>
<div style="display:none">hidden tracking text</div>
</article>
<footer>Copyright 2026 Distributed Notes</footer>
<script>document.write("late script")</script>
</body></html>`

func TestReaderHTML(t *testing.T) {
	s := newSite(t, map[string]page{"/posts/raft": {contentType: "text/html; charset=utf-8", body: []byte(articleHTML)}})
	r := newTestReader(t, ReaderConfig{})
	p, err := r.Read(context.Background(), s.URL+"/posts/raft#leader-election")
	require.NoError(t, err)

	assert.Equal(t, s.URL+"/posts/raft", p.URL)
	assert.Equal(t, s.URL+"/posts/raft#leader-election", p.RequestedURL)
	assert.Equal(t, "text/html", p.ContentType)
	assert.False(t, p.Truncated)
	assert.Contains(t, p.Title, "Raft in Practice")
	assert.Equal(t, "Ada Lovelace", p.Byline)
	assert.Equal(t, time.Date(2025, 2, 3, 10, 0, 0, 0, time.UTC), p.Published)
	assert.NotEmpty(t, p.Excerpt)

	c := p.Content
	assert.Contains(t, c, "Raft is a consensus algorithm designed to be easy to understand.")
	assert.Contains(t, c, "["+"the paper]("+s.URL+"/papers/raft.pdf)", "relative links become absolute")
	assert.Contains(t, c, "[Raft site](https://raft.github.io/)")
	assert.Contains(t, c, "![server states]("+s.URL+"/img/states.png)")
	assert.Contains(t, c, "| Term | Leader |", "tables survive as Markdown tables")
	assert.Contains(t, c, "click here")
	for _, gone := range []string{"javascript:", "steal()", "tracking-script-body", "late script", "color:red", "data:image", "hidden tracking text", "Archive"} {
		assert.NotContains(t, c, gone)
	}
	assert.True(t, utf8.ValidString(c))
}

func TestReaderContentTypes(t *testing.T) {
	pages := map[string]page{
		"/plain":      {contentType: "text/plain; charset=utf-8", body: []byte("line one\r\nline two\n")},
		"/readme.md":  {contentType: "text/markdown", body: []byte("intro\n\n# Getting Started #\n\nRun `go test`.\n")},
		"/data.json":  {contentType: "application/json", body: []byte(`{"name":"deepgraph","tags":["go","agents"],"code":"` + "```" + `"}`)},
		"/ld.json":    {contentType: "application/ld+json", body: []byte(`{"@type":"Article"}`)},
		"/sniff-html": {body: []byte("<!DOCTYPE html><html><head><title>Sniffed</title></head><body><p>" + strings.Repeat("Sniffed page body text. ", 20) + "</p></body></html>")},
		"/octet-text": {contentType: "application/octet-stream", body: []byte("just some text shipped as octets")},
		"/feed.xml":   {contentType: "application/rss+xml", body: []byte(`<?xml version="1.0"?><rss><channel><title>Feed</title></channel></rss>`)},
		"/image.png":  {contentType: "image/png", body: []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")},
		"/doc.pdf":    {contentType: "application/pdf", body: []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj")},
		"/fake.html":  {contentType: "text/html", body: []byte("%PDF-1.4\n1 0 obj <<>>")},
		"/archive":    {contentType: "application/zip", body: []byte("PK\x03\x04\x14\x00\x00\x00")},
		"/nul.txt":    {contentType: "text/plain", body: []byte("text\x00with\x00nul\x00bytes")},
		"/sniff-bin":  {body: []byte{0x00, 0x01, 0x02, 0x03, 0xff, 0xfe, 0x10, 0x11}},
	}
	s := newSite(t, pages)
	r := newTestReader(t, ReaderConfig{})
	tests := []struct {
		path      string
		wantType  string
		wantTitle string
		want      string // exact content, or a substring if wantSub
		wantSub   bool
		wantErr   string
	}{
		{path: "/plain", wantType: "text/plain", want: "line one\nline two"},
		{path: "/readme.md", wantType: "text/markdown", wantTitle: "Getting Started", want: "intro\n\n# Getting Started #\n\nRun `go test`."},
		{path: "/data.json", wantType: "application/json", want: "````json\n{\n  \"name\": \"deepgraph\",\n  \"tags\": [\n    \"go\",\n    \"agents\"\n  ],\n  \"code\": \"```\"\n}\n````"},
		{path: "/ld.json", wantType: "application/ld+json", want: "```json\n{\n  \"@type\": \"Article\"\n}\n```"},
		{path: "/sniff-html", wantType: "text/html", wantTitle: "Sniffed", want: "Sniffed page body text.", wantSub: true},
		{path: "/octet-text", wantType: "text/plain", want: "just some text shipped as octets"},
		{path: "/feed.xml", wantType: "application/rss+xml", want: "<title>Feed</title>", wantSub: true},
		{path: "/image.png", wantErr: "is image/png, not a text document"},
		{path: "/doc.pdf", wantErr: "is a PDF; reading PDF documents is not supported"},
		{path: "/fake.html", wantErr: "is a PDF"},
		{path: "/archive", wantErr: "application/zip"},
		{path: "/nul.txt", wantErr: "holds binary data"},
		{path: "/sniff-bin", wantErr: "not a text document"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p, err := r.Read(context.Background(), s.URL+tt.path)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrUnsupportedContent)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Contains(t, err.Error(), s.URL+tt.path, "the error names the URL")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantType, p.ContentType)
			assert.Equal(t, tt.wantTitle, p.Title)
			if tt.wantSub {
				assert.Contains(t, p.Content, tt.want)
			} else {
				assert.Equal(t, tt.want, p.Content)
			}
		})
	}
}

func encode(t *testing.T, e encoding.Encoding, s string) []byte {
	t.Helper()
	b, err := e.NewEncoder().Bytes([]byte(s))
	require.NoError(t, err)
	return b
}

func TestReaderCharsets(t *testing.T) {
	prose := strings.Repeat("Plenty of ordinary words fill this paragraph. ", 8)
	htmlDoc := func(meta, text string) string {
		return "<html><head>" + meta + "<title>T</title></head><body><article><p>" + text + " " + prose + "</p></article></body></html>"
	}
	latePadding := "<!--" + strings.Repeat(" padding ", 150) + "-->"
	pages := map[string]page{
		"/latin1-header": {contentType: "text/html; charset=ISO-8859-1", body: encode(t, charmap.ISO8859_1, htmlDoc("", "Café crème à la française"))},
		"/cp1252-meta":   {contentType: "text/html", body: encode(t, charmap.Windows1252, htmlDoc(`<meta charset="windows-1252">`, "“Quoted” costs 5€ – cheap"))},
		"/sjis-header":   {contentType: "text/html; charset=Shift_JIS", body: encode(t, japanese.ShiftJIS, htmlDoc("", "日本語のテキストです"))},
		"/sjis-meta":     {contentType: "text/html", body: encode(t, japanese.ShiftJIS, htmlDoc(`<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">`, "東京タワー"))},
		"/utf8-late":     {contentType: "text/html", body: []byte(htmlDoc(latePadding, "Ünïcödé after the first kilobyte: 中文"))},
		"/latin1-plain":  {contentType: "text/plain; charset=latin1", body: encode(t, charmap.ISO8859_1, "naïve résumé")},
		"/utf16-bom":     {contentType: "text/plain", body: encode(t, unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), "UTF-16 text: ü")},
		"/undeclared":    {contentType: "text/plain", body: encode(t, charmap.Windows1252, "caf\u00e9 without a declaration")},
	}
	s := newSite(t, pages)
	r := newTestReader(t, ReaderConfig{})
	tests := map[string]string{
		"/latin1-header": "Café crème à la française",
		"/cp1252-meta":   "“Quoted” costs 5€ – cheap",
		"/sjis-header":   "日本語のテキストです",
		"/sjis-meta":     "東京タワー",
		"/utf8-late":     "Ünïcödé after the first kilobyte: 中文",
		"/latin1-plain":  "naïve résumé",
		"/utf16-bom":     "UTF-16 text: ü",
		"/undeclared":    "café without a declaration",
	}
	for path, want := range tests {
		t.Run(path, func(t *testing.T) {
			p, err := r.Read(context.Background(), s.URL+path)
			require.NoError(t, err)
			assert.Contains(t, p.Content, want)
			assert.True(t, utf8.ValidString(p.Content))
			assert.NotContains(t, p.Content, "\uFFFD")
		})
	}
}

func TestReaderMaxBytes(t *testing.T) {
	big := strings.Repeat("0123456789abcdef\n", 200) // 3400 bytes
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = io.WriteString(zw, big)
	require.NoError(t, zw.Close())
	s := newSite(t, map[string]page{
		"/big":      {contentType: "text/plain", body: []byte(big)},
		"/big-gz":   {contentType: "text/plain", encoding: "gzip", body: gz.Bytes()},
		"/small":    {contentType: "text/plain", body: []byte("tiny")},
		"/big.json": {contentType: "application/json", body: []byte(`{"k":"` + strings.Repeat("v", 3000) + `"}`)},
	})
	r := newTestReader(t, ReaderConfig{MaxBytes: 1000})
	for _, path := range []string{"/big", "/big-gz"} {
		p, err := r.Read(context.Background(), s.URL+path)
		require.NoError(t, err, path)
		assert.True(t, p.Truncated, path)
		assert.Equal(t, strings.TrimSpace(big[:1000]), p.Content, path)
	}
	p, err := r.Read(context.Background(), s.URL+"/small")
	require.NoError(t, err)
	assert.False(t, p.Truncated)
	assert.Equal(t, "tiny", p.Content)
	p, err = r.Read(context.Background(), s.URL+"/big.json")
	require.NoError(t, err)
	assert.True(t, p.Truncated)
	assert.True(t, strings.HasPrefix(p.Content, "```json\n{\"k\":\"vvv"), "truncated JSON is shown as is")
}

func compress(t *testing.T, kind string, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch kind {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "zlib":
		w = zlib.NewWriter(&buf)
	case "flate":
		fw, err := flate.NewWriter(&buf, flate.BestCompression)
		require.NoError(t, err)
		w = fw
	}
	_, err := w.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func TestReaderCompression(t *testing.T) {
	text := []byte("compressed plain text body")
	bomb := compress(t, "gzip", make([]byte, 8<<20)) // 8 MiB of zeros in ~8 KiB
	require.Less(t, len(bomb), 64<<10)
	s := newSite(t, map[string]page{
		"/gzip":          {contentType: "text/plain", encoding: "gzip", body: compress(t, "gzip", text)},
		"/x-gzip":        {contentType: "text/plain", encoding: "x-gzip", body: compress(t, "gzip", text)},
		"/deflate-zlib":  {contentType: "text/plain", encoding: "deflate", body: compress(t, "zlib", text)},
		"/deflate-raw":   {contentType: "text/plain", encoding: "deflate", body: compress(t, "flate", text)},
		"/identity":      {contentType: "text/plain", encoding: "identity", body: text},
		"/bomb":          {contentType: "text/html", encoding: "gzip", body: bomb},
		"/brotli":        {contentType: "text/plain", encoding: "br", body: []byte{0x1b, 0x03}},
		"/broken-gzip":   {contentType: "text/plain", encoding: "gzip", body: []byte("not gzip at all")},
		"/expected-size": {contentType: "text/plain", encoding: "gzip", body: compress(t, "gzip", bytes.Repeat([]byte("abcdefgh"), 10))},
	})
	r := newTestReader(t, ReaderConfig{MaxBytes: 32 << 20})
	for _, path := range []string{"/gzip", "/x-gzip", "/deflate-zlib", "/deflate-raw", "/identity"} {
		p, err := r.Read(context.Background(), s.URL+path)
		require.NoError(t, err, path)
		assert.Equal(t, string(text), p.Content, path)
	}
	assert.Equal(t, "gzip, deflate", s.last.Get("Accept-Encoding"))

	_, err := r.Read(context.Background(), s.URL+"/bomb")
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrCompressionBomb)
	assert.Contains(t, err.Error(), s.URL+"/bomb")

	_, err = r.Read(context.Background(), s.URL+"/brotli")
	assert.ErrorIs(t, err, ErrUnsupportedContent)
	assert.ErrorContains(t, err, `content encoding "br" is not supported`)
	_, err = r.Read(context.Background(), s.URL+"/broken-gzip")
	assert.ErrorContains(t, err, "invalid gzip body")

	p, err := r.Read(context.Background(), s.URL+"/expected-size")
	require.NoError(t, err, "a small, very repetitive body is below the ratio floor")
	assert.Len(t, p.Content, 80)
}

func TestReaderBombCappedBySizeWhenRatioIsPlausible(t *testing.T) {
	// Moderately compressible text (about 2x) larger than MaxBytes: cut, not refused.
	var b strings.Builder
	for i := 0; b.Len() < 3<<19; i++ {
		fmt.Fprintf(&b, "%d %x line of text number %d\n", i, i*7919, i*31)
	}
	s := newSite(t, map[string]page{"/log": {contentType: "text/plain", encoding: "gzip", body: compress(t, "gzip", []byte(b.String()))}})
	r := newTestReader(t, ReaderConfig{MaxBytes: 5 << 18})
	p, err := r.Read(context.Background(), s.URL+"/log")
	require.NoError(t, err)
	assert.True(t, p.Truncated)
	assert.LessOrEqual(t, len(p.Content), 5<<18)
	assert.Greater(t, len(p.Content), ratioFloor, "the ratio was judged, and passed")
}

// mapResolver makes names resolve wherever a test wants.
type mapResolver map[string]string

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := m[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

func TestReaderSSRF(t *testing.T) {
	var secretHits atomic.Int32
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	mux.HandleFunc("/secret", func(w http.ResponseWriter, r *http.Request) {
		secretHits.Add(1)
		_, _ = io.WriteString(w, "internal admin data")
	})
	mux.HandleFunc("/bounce", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://internal.corp:%d/secret", port), http.StatusFound)
	})
	mux.HandleFunc("/to-metadata", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	resolver := mapResolver{"public.example": "127.0.0.1", "allowed.example": "127.0.0.1", "internal.corp": "10.0.0.9"}
	at := func(host, path string) string { return fmt.Sprintf("http://%s:%d%s", host, port, path) }

	tests := []struct {
		name  string
		guard netguard.Config
		url   string
		want  netguard.Kind
	}{
		{name: "loopback by default", url: srv.URL + "/secret", want: netguard.KindPrivate},
		{name: "IPv6 loopback", url: fmt.Sprintf("http://[::1]:%d/secret", port), want: netguard.KindPrivate},
		{name: "metadata address", url: "http://169.254.169.254/latest/meta-data/", want: netguard.KindMetadata},
		{name: "Alibaba metadata", url: "http://100.100.100.200/latest/meta-data/", want: netguard.KindMetadata},
		{name: "metadata name", url: "http://metadata.google.internal/computeMetadata/v1/", want: netguard.KindMetadata},
		{name: "public-looking name resolving to loopback", url: at("public.example", "/secret"), want: netguard.KindPrivate},
		{name: "allowed host redirecting to a private one", guard: netguard.Config{Allow: []string{"allowed.example"}}, url: at("allowed.example", "/bounce"), want: netguard.KindPrivate},
		{name: "allowed host redirecting to metadata", guard: netguard.Config{Allow: []string{"allowed.example"}}, url: at("allowed.example", "/to-metadata"), want: netguard.KindMetadata},
		{name: "AllowPrivate still refuses metadata", guard: netguard.Config{AllowPrivate: true}, url: "http://169.254.169.254/", want: netguard.KindMetadata},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.guard.Resolver = resolver
			r, err := NewReader(ReaderConfig{Guard: tt.guard})
			require.NoError(t, err)
			defer r.Close()
			_, err = r.Read(context.Background(), tt.url)
			require.Error(t, err)
			assert.ErrorIs(t, err, netguard.ErrBlocked)
			var be *netguard.BlockedError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, tt.want, be.Kind, err.Error())
			assert.Equal(t, int32(0), secretHits.Load(), "the internal endpoint must never be reached")
		})
	}

	for _, raw := range []string{"file:///etc/passwd", "ftp://example.com/x", "gopher://127.0.0.1:6379/_", "javascript:alert(1)"} {
		r, err := NewReader(ReaderConfig{Guard: netguard.Config{AllowPrivate: true}})
		require.NoError(t, err)
		_, err = r.Read(context.Background(), raw)
		assert.ErrorIs(t, err, netguard.ErrBlocked, raw)
	}

	// The explicit switches open the way.
	for _, g := range []netguard.Config{{Allow: []string{"127.0.0.1"}}, {AllowPrivate: true}, {Allow: []string{"public.example"}, Resolver: resolver}} {
		r, err := NewReader(ReaderConfig{Guard: g})
		require.NoError(t, err)
		u := srv.URL + "/secret"
		if g.Resolver != nil {
			u = at("public.example", "/secret")
		}
		p, err := r.Read(context.Background(), u)
		require.NoError(t, err)
		assert.Equal(t, "internal admin data", p.Content)
		r.Close()
	}
}

func TestReaderBadAllowList(t *testing.T) {
	_, err := NewReader(ReaderConfig{Guard: netguard.Config{Allow: []string{"10.0.0.0/99"}}})
	assert.ErrorContains(t, err, "allow-list entry")
}

func TestReaderStatusErrorsAndCaching(t *testing.T) {
	s := newSite(t, map[string]page{
		"/gone":  {status: http.StatusGone, contentType: "text/plain", body: []byte("gone")},
		"/flaky": {status: http.StatusBadGateway, contentType: "text/plain", body: []byte("bad gateway")},
		"/ok":    {contentType: "text/plain", body: []byte("fine")},
	})
	r := newTestReader(t, ReaderConfig{MaxRetries: -1})
	for range 2 {
		_, err := r.Read(context.Background(), s.URL+"/gone")
		var se *StatusError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, http.StatusGone, se.Status)
		assert.Equal(t, s.URL+"/gone", se.URL)
		assert.Contains(t, err.Error(), "410 Gone")
	}
	assert.Equal(t, 1, s.count("/gone"), "a 4xx answer is remembered")

	for range 2 {
		_, err := r.Read(context.Background(), s.URL+"/flaky")
		var se *StatusError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, http.StatusBadGateway, se.Status)
	}
	assert.Equal(t, 2, s.count("/flaky"), "a 5xx answer may pass and is not remembered")

	for _, u := range []string{"/ok", "/ok#frag", "/ok?utm_source=x", "/ok/"} {
		p, err := r.Read(context.Background(), s.URL+u)
		require.NoError(t, err)
		assert.Equal(t, "fine", p.Content)
		assert.Equal(t, s.URL+u, p.RequestedURL)
	}
	assert.Equal(t, 1, s.count("/ok"), "equivalent URLs share the cached page")
}

func TestReaderRetriesServerErrors(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "second try")
	}))
	defer srv.Close()
	r := newTestReader(t, ReaderConfig{})
	p, err := r.Read(context.Background(), srv.URL)
	require.NoError(t, err)
	assert.Equal(t, "second try", p.Content)
	assert.Equal(t, int32(2), n.Load())
}

func TestReaderSharesConcurrentFetches(t *testing.T) {
	var hits atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		<-release
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "shared body")
	}))
	defer srv.Close()
	unblock := sync.OnceFunc(func() { close(release) })
	defer unblock() // before srv.Close, even when an assertion stops the test
	r := newTestReader(t, ReaderConfig{})

	const callers = 8
	pages := make([]*Page, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			pages[i], errs[i] = r.Read(context.Background(), fmt.Sprintf("%s/page?utm_campaign=c%d#s%d", srv.URL, i, i))
		})
	}
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return hits.Load() == 1 && len(r.inflight) == 1
	}, 30*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond) // let the followers queue up on the flight
	unblock()
	wg.Wait()

	assert.Equal(t, int32(1), hits.Load(), "one fetch for all concurrent callers")
	for i := range callers {
		require.NoError(t, errs[i])
		assert.Equal(t, "shared body", pages[i].Content)
	}
	pages[0].Content = "modified by caller 0"
	assert.Equal(t, "shared body", pages[1].Content, "each caller gets its own copy")
	again, err := r.Read(context.Background(), srv.URL+"/page")
	require.NoError(t, err)
	assert.Equal(t, "shared body", again.Content, "the cache is not affected by callers' edits")
	assert.Equal(t, int32(1), hits.Load())
}

func TestReaderFollowerSurvivesLeaderCancellation(t *testing.T) {
	var hits atomic.Int32
	firstArrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			close(firstArrived)
			<-r.Context().Done() // the leader gives up before an answer
			return
		}
		_, _ = io.WriteString(w, "for the patient caller")
	}))
	defer srv.Close()
	r := newTestReader(t, ReaderConfig{})

	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() {
		_, err := r.Read(leaderCtx, srv.URL)
		leaderErr <- err
	}()
	<-firstArrived
	followerPage := make(chan *Page, 1)
	followerErr := make(chan error, 1)
	go func() {
		p, err := r.Read(context.Background(), srv.URL)
		followerPage <- p
		followerErr <- err
	}()
	time.Sleep(20 * time.Millisecond) // the follower now waits on the leader's flight
	cancelLeader()

	assert.ErrorIs(t, <-leaderErr, context.Canceled)
	require.NoError(t, <-followerErr)
	assert.Equal(t, "for the patient caller", (<-followerPage).Content)
	assert.Equal(t, int32(2), hits.Load())
}

func TestReaderWaitingCallerCanGiveUp(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		_, _ = io.WriteString(w, "late")
	}))
	defer srv.Close()
	defer close(release)
	r := newTestReader(t, ReaderConfig{})
	go func() { _, _ = r.Read(context.Background(), srv.URL) }()
	require.Eventually(t, func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.inflight) == 1 }, 30*time.Second, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := r.Read(ctx, srv.URL)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestReaderConcurrencyBound(t *testing.T) {
	const limit, total = 2, 6
	var inFlight, peak atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur := inFlight.Add(1)
		for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
		}
		<-release
		inFlight.Add(-1)
		_, _ = io.WriteString(w, "page "+r.URL.Path)
	}))
	defer srv.Close()
	unblock := sync.OnceFunc(func() { close(release) })
	defer unblock()
	r := newTestReader(t, ReaderConfig{MaxConcurrency: limit})
	var wg sync.WaitGroup
	for i := range total {
		wg.Go(func() {
			p, err := r.Read(context.Background(), fmt.Sprintf("%s/p%d", srv.URL, i))
			assert.NoError(t, err)
			if err == nil {
				assert.Equal(t, fmt.Sprintf("page /p%d", i), p.Content)
			}
		})
	}
	require.Eventually(t, func() bool { return inFlight.Load() == limit }, 30*time.Second, time.Millisecond)
	time.Sleep(30 * time.Millisecond)
	assert.Equal(t, int32(limit), inFlight.Load(), "no more than the bound reach the network")
	unblock()
	wg.Wait()
	assert.Equal(t, int32(limit), peak.Load())
}

func TestReaderTimeout(t *testing.T) {
	var slow atomic.Bool
	slow.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow.Load() {
			<-r.Context().Done() // only the reader's timeout ends the read
			return
		}
		_, _ = io.WriteString(w, "fast now")
	}))
	defer srv.Close()
	r := newTestReader(t, ReaderConfig{Timeout: 200 * time.Millisecond, MaxRetries: -1})
	_, err := r.Read(context.Background(), srv.URL)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no complete page within 200ms")
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	slow.Store(false)
	p, err := r.Read(context.Background(), srv.URL)
	require.NoError(t, err, "timeouts are not cached")
	assert.Equal(t, "fast now", p.Content)
}

func TestReaderCacheSize(t *testing.T) {
	s := newSite(t, map[string]page{"/a": {body: []byte("a")}, "/b": {body: []byte("b")}})
	tests := []struct {
		name      string
		size      int
		wantA     int
		wantB     int
		sequence  []string
		wantFinal string
	}{
		{name: "LRU of one evicts", size: 1, sequence: []string{"/a", "/b", "/a"}, wantA: 2, wantB: 1},
		{name: "default keeps both", size: 0, sequence: []string{"/a", "/b", "/a", "/b"}, wantA: 1, wantB: 1},
		{name: "disabled", size: -1, sequence: []string{"/a", "/a", "/b"}, wantA: 2, wantB: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := map[string]int{"/a": s.count("/a"), "/b": s.count("/b")}
			r := newTestReader(t, ReaderConfig{CacheSize: tt.size})
			for _, p := range tt.sequence {
				_, err := r.Read(context.Background(), s.URL+p)
				require.NoError(t, err)
			}
			assert.Equal(t, tt.wantA, s.count("/a")-before["/a"])
			assert.Equal(t, tt.wantB, s.count("/b")-before["/b"])
		})
	}
}

func TestReaderRedirects(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/new", http.StatusMovedPermanently) })
	mux.HandleFunc("/new", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "moved here") })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	r := newTestReader(t, ReaderConfig{Guard: netguard.Config{Allow: []string{"127.0.0.1"}, MaxRedirects: 3}})
	p, err := r.Read(context.Background(), srv.URL+"/old")
	require.NoError(t, err)
	assert.Equal(t, srv.URL+"/new", p.URL)
	assert.Equal(t, srv.URL+"/old", p.RequestedURL)
	_, err = r.Read(context.Background(), srv.URL+"/loop")
	assert.ErrorContains(t, err, "too many redirects (the limit is 3)")
}

func TestReaderHeaders(t *testing.T) {
	s := newSite(t, map[string]page{"/": {body: []byte("x")}})
	r := newTestReader(t, ReaderConfig{})
	_, err := r.Read(context.Background(), s.URL+"/")
	require.NoError(t, err)
	assert.Equal(t, DefaultUserAgent, s.last.Get("User-Agent"))
	assert.Contains(t, s.last.Get("Accept"), "text/html")
	r2 := newTestReader(t, ReaderConfig{UserAgent: "my-bot/2"})
	_, err = r2.Read(context.Background(), s.URL+"/")
	require.NoError(t, err)
	assert.Equal(t, "my-bot/2", s.last.Get("User-Agent"))
}

func TestReaderFallsBackToTheWholeBody(t *testing.T) {
	listing := `<html><head><title>Index of docs</title></head><body>
<header><a href="/">Logo</a></header><nav>Menu entries</nav>
<main><h2>Guides</h2><ul><li><a href="/g/install">Install</a></li><li><a href="/g/config">Configure</a></li><li><a href="/g/deploy">Deploy</a></li></ul></main>
<aside>Sponsored</aside><footer>Footer text</footer></body></html>`
	empty := `<html><head><title>App</title><script>render()</script></head><body><div id="root"></div><script>boot()</script></body></html>`
	s := newSite(t, map[string]page{
		"/docs":  {contentType: "text/html", body: []byte(listing)},
		"/app":   {contentType: "text/html", body: []byte(empty)},
		"/short": {contentType: "text/html", body: []byte(`<html><body><p>Short note.</p></body></html>`)},
	})
	r := newTestReader(t, ReaderConfig{})
	p, err := r.Read(context.Background(), s.URL+"/docs")
	require.NoError(t, err)
	assert.Equal(t, "Index of docs", p.Title)
	assert.Contains(t, p.Content, "[Install]("+s.URL+"/g/install)")
	assert.Contains(t, p.Content, "[Deploy]("+s.URL+"/g/deploy)")
	for _, chrome := range []string{"Menu entries", "Sponsored", "Footer text"} {
		assert.NotContains(t, p.Content, chrome)
	}

	p, err = r.Read(context.Background(), s.URL+"/app")
	require.NoError(t, err, "a page without text is not an error")
	assert.Equal(t, "App", p.Title)
	assert.Empty(t, p.Content)

	p, err = r.Read(context.Background(), s.URL+"/short")
	require.NoError(t, err)
	assert.Equal(t, "Short note.", p.Content)
}

// failingExtractor stands in for a broken readability release.
type failingExtractor struct{}

func (failingExtractor) extract(*html.Node, *url.URL) (article, error) {
	return article{}, errors.New("readability exploded")
}

func TestReaderSurvivesExtractorFailure(t *testing.T) {
	s := newSite(t, map[string]page{"/": {contentType: "text/html", body: []byte(articleHTML)}})
	r := newTestReader(t, ReaderConfig{})
	r.extractor = failingExtractor{}
	p, err := r.Read(context.Background(), s.URL+"/")
	require.NoError(t, err)
	assert.Contains(t, p.Content, "Raft is a consensus algorithm")
	assert.Contains(t, p.Title, "Raft in Practice", "the <title> stands in")
	assert.NotContains(t, p.Content, "tracking-script-body")
}

func TestReaderInvalidURLs(t *testing.T) {
	r := newTestReader(t, ReaderConfig{})
	for _, raw := range []string{"", "::not a url", "http://", "/relative/path"} {
		_, err := r.Read(context.Background(), raw)
		assert.Error(t, err, raw)
	}
}

func FuzzDecodeText(f *testing.F) {
	f.Add([]byte("caf\xe9"), "text/plain; charset=iso-8859-1")
	f.Add([]byte("<meta charset=shift_jis>\x93\xfa\x96\x7b"), "text/html")
	f.Add([]byte("\xff\xfeA\x00"), "")
	f.Add([]byte("plain"), "text/plain; charset=bogus")
	f.Fuzz(func(t *testing.T, body []byte, ct string) {
		if out := decodeText(body, ct); !utf8.ValidString(out) {
			t.Fatalf("decodeText produced invalid UTF-8: %q", out)
		}
	})
}

func FuzzHTMLToMarkdown(f *testing.F) {
	f.Add(articleHTML)
	f.Add("<p>unclosed <b>bold <a href='javascript:x'>link")
	f.Add("<table><tr><td>a<td>b</table><img src=data:,x>")
	r, err := NewReader(ReaderConfig{})
	if err != nil {
		f.Fatal(err)
	}
	base, err := url.Parse("https://example.com/dir/page")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		p, err := r.htmlToMarkdown(context.Background(), doc, base)
		if err != nil {
			return
		}
		if strings.Contains(p.Content, "javascript:") && !strings.Contains(doc, "javascript:") {
			t.Fatalf("a javascript: link appeared from nowhere")
		}
		if !utf8.ValidString(p.Content) {
			t.Fatalf("invalid UTF-8 in content")
		}
	})
}

// TestReaderUnboundedByDefault: with no MaxConcurrency, every page of a wide
// fan-out is fetched at once (a run's reads never wait on each other).
func TestReaderUnboundedByDefault(t *testing.T) {
	const total = 12
	var inFlight atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight.Add(1)
		<-release
		_, _ = io.WriteString(w, "page "+r.URL.Path)
	}))
	defer srv.Close()
	unblock := sync.OnceFunc(func() { close(release) })
	defer unblock()
	r := newTestReader(t, ReaderConfig{})
	var wg sync.WaitGroup
	for i := range total {
		wg.Go(func() {
			_, err := r.Read(context.Background(), fmt.Sprintf("%s/p%d", srv.URL, i))
			assert.NoError(t, err)
		})
	}
	require.Eventually(t, func() bool { return inFlight.Load() == total }, 30*time.Second, time.Millisecond,
		"all %d reads reach the server before any is answered", total)
	unblock()
	wg.Wait()
}

func TestReaderMarksCachedPages(t *testing.T) {
	s := newSite(t, map[string]page{"/a": {body: []byte("a")}})
	r := newTestReader(t, ReaderConfig{})
	first, err := r.Read(context.Background(), s.URL+"/a")
	require.NoError(t, err)
	assert.False(t, first.Cached, "the first read fetches the page")
	second, err := r.Read(context.Background(), s.URL+"/a#part")
	require.NoError(t, err)
	assert.True(t, second.Cached, "the second read comes from the cache")
	assert.Equal(t, 1, s.count("/a"))
	data, err := json.Marshal(second)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "cached", "Cached is about one read, not the page")

	uncached := newTestReader(t, ReaderConfig{CacheSize: -1})
	again, err := uncached.Read(context.Background(), s.URL+"/a")
	require.NoError(t, err)
	assert.False(t, again.Cached)
}
