package eval

import (
	"context"
	"maps"
	"net/url"
	"strings"
	"sync"

	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/search"
)

// Recorder keeps the text a run read of each source: the content its
// searches returned (a corpus passage, a search API's page text, else the
// snippet) and the pages its reader read. Claim support is judged against
// this text — what the run had in front of it — not against a page fetched
// again later, which may have changed. Wrap a run's searcher and page reader
// with it (research.SearchBackend's Searcher and Reader); use one Recorder
// per run. It is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	texts map[string]string // by sourceKey
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{texts: map[string]string{}} }

// Texts returns the text recorded for each source URL (its key: see Text).
func (r *Recorder) Texts() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.texts)
}

// add records text for u: a passage not seen yet is appended to what the
// source has, so a corpus file cited through several passages keeps them
// all.
func (r *Recorder) add(u, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	k := sourceKey(u)
	r.mu.Lock()
	defer r.mu.Unlock()
	have := r.texts[k]
	switch {
	case have == "" || strings.Contains(text, have):
		r.texts[k] = text
	case !strings.Contains(have, text):
		r.texts[k] = have + "\n\n" + text
	}
}

// Searcher returns s recording what its results say.
func (r *Recorder) Searcher(s search.Searcher) search.Searcher {
	if s == nil {
		return nil
	}
	rs := &recordingSearcher{inner: s, rec: r}
	if sk, ok := s.(search.Skipper); ok {
		return &skippingRecorder{recordingSearcher: rs, sk: sk}
	}
	return rs
}

// Reader returns p recording the pages it reads.
func (r *Recorder) Reader(p research.PageReader) research.PageReader {
	if p == nil {
		return nil
	}
	if pr, ok := p.(prefixPageReader); ok {
		return &recordingPrefixReader{recordingReader{inner: p, rec: r}, pr}
	}
	return &recordingReader{inner: p, rec: r}
}

type recordingSearcher struct {
	inner search.Searcher
	rec   *Recorder
}

func (s *recordingSearcher) Name() string { return s.inner.Name() }

func (s *recordingSearcher) Search(ctx context.Context, q string, opts search.Options) ([]search.Result, error) {
	res, err := s.inner.Search(ctx, q, opts)
	for _, r := range res {
		text := r.Content
		if text == "" {
			text = r.Snippet
		}
		s.rec.add(r.URL, text)
	}
	return res, err
}

type skippingRecorder struct {
	*recordingSearcher
	sk search.Skipper
}

func (s *skippingRecorder) Skipped() []string { return s.sk.Skipped() }

type prefixPageReader interface {
	ReadUpTo(ctx context.Context, url string, maxChars int) (*search.Page, error)
}

type recordingReader struct {
	inner research.PageReader
	rec   *Recorder
}

func (p *recordingReader) Read(ctx context.Context, u string) (*search.Page, error) {
	page, err := p.inner.Read(ctx, u)
	if err == nil && page != nil {
		p.rec.add(u, page.Content)
	}
	return page, err
}

type recordingPrefixReader struct {
	recordingReader
	pr prefixPageReader
}

func (p *recordingPrefixReader) ReadUpTo(ctx context.Context, u string, maxChars int) (*search.Page, error) {
	page, err := p.pr.ReadUpTo(ctx, u, maxChars)
	if err == nil && page != nil {
		p.rec.add(u, page.Content)
	}
	return page, err
}

// sourceKey is the key a source's text is kept under: a web page's
// normalised URL (search.PageKey), a file:// URL without its line
// fragment, so that every passage of a corpus file is one source.
func sourceKey(raw string) string {
	if u, err := url.Parse(strings.TrimSpace(raw)); err == nil && u.Scheme == "file" {
		u.Fragment, u.RawFragment = "", ""
		return u.String()
	}
	return search.PageKey(raw)
}
