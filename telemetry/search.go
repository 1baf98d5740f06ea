package telemetry

import (
	"context"
	"errors"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/deepgraph/deepgraph/search"
)

// Attribute keys of search and page-read spans.
const (
	AttrSearchProvider = attribute.Key("deepgraph.search.provider")
	AttrSearchQuery    = attribute.Key("deepgraph.search.query")
	AttrSearchResults  = attribute.Key("deepgraph.search.results")
	AttrServerAddress  = attribute.Key("server.address")
	AttrURLFull        = attribute.Key("url.full")
	AttrPageBytes      = attribute.Key("deepgraph.page.bytes")
	AttrPageType       = attribute.Key("deepgraph.page.content_type")
	AttrPageTruncated  = attribute.Key("deepgraph.page.truncated")
	AttrPagePartial    = attribute.Key("deepgraph.page.partial")
	AttrMaxChars       = attribute.Key("deepgraph.page.max_chars")
	AttrPageCacheHit   = attribute.Key("deepgraph.page.cache_hit")
)

// Searcher wraps s so that each search is a client span "search PROVIDER"
// with the provider, the number of results, the HTTP status of a failure
// and error.type. The query text is recorded only with
// Options.RecordContent. The wrapper keeps s's search.Skipper. A nil
// Telemetry returns s.
func (t *Telemetry) Searcher(s search.Searcher) search.Searcher {
	if t == nil || s == nil {
		return s
	}
	ts := &tracedSearcher{inner: s, t: t, name: "search " + s.Name()}
	if sk, ok := s.(search.Skipper); ok {
		return &skippingSearcher{ts, sk}
	}
	return ts
}

type tracedSearcher struct {
	inner search.Searcher
	t     *Telemetry
	name  string
}

type skippingSearcher struct {
	*tracedSearcher
	sk search.Skipper
}

func (s *skippingSearcher) Skipped() []string { return s.sk.Skipped() }

func (s *tracedSearcher) Name() string { return s.inner.Name() }

// Unwrap returns the wrapped searcher.
func (s *tracedSearcher) Unwrap() search.Searcher { return s.inner }

func (s *tracedSearcher) Search(ctx context.Context, query string, opts search.Options) ([]search.Result, error) {
	ctx, span := s.t.tracer.Start(ctx, s.name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(AttrSearchProvider.String(s.inner.Name())))
	defer span.End()
	if s.t.opts.RecordContent {
		span.SetAttributes(AttrSearchQuery.String(query))
	}
	start := time.Now()
	res, err := s.inner.Search(ctx, query, opts)
	span.SetAttributes(AttrSearchResults.Int(len(res)))
	if err != nil {
		if apiErr, ok := errors.AsType[*search.APIError](err); ok && apiErr.Status != 0 {
			span.SetAttributes(AttrHTTPStatus.Int(apiErr.Status))
		}
		fail(span, err)
	}
	if in := s.t.metrics; in != nil {
		provider := AttrSearchProvider.String(s.inner.Name())
		in.searches.Add(ctx, 1, metric.WithAttributes(provider))
		if err != nil {
			in.searchDuration.Record(ctx, since(start), metric.WithAttributes(provider, AttrErrorType.String(errorType(err))))
			in.failed(ctx, OpSearch, err, provider)
		} else {
			in.searchDuration.Record(ctx, since(start), metric.WithAttributes(provider))
		}
	}
	return res, err
}

// PageReader reads pages whole or up to a number of characters, as
// *search.Reader does.
type PageReader interface {
	Read(ctx context.Context, url string) (*search.Page, error)
	ReadUpTo(ctx context.Context, url string, maxChars int) (*search.Page, error)
}

// Reader wraps r so that each page read is a client span "read_page" with
// the URL's host (server.address; the full URL only with
// Options.RecordContent), the bytes of content, its type, whether it was
// truncated or partial, whether it came from the reader's cache
// (deepgraph.page.cache_hit, from search.Page.Cached), the HTTP status of a failure and error.type. A nil
// Telemetry returns r.
func (t *Telemetry) Reader(r PageReader) PageReader {
	if t == nil || r == nil {
		return r
	}
	return &tracedReader{inner: r, t: t}
}

type tracedReader struct {
	inner PageReader
	t     *Telemetry
}

func (r *tracedReader) Read(ctx context.Context, u string) (*search.Page, error) {
	return r.read(ctx, u, 0)
}

func (r *tracedReader) ReadUpTo(ctx context.Context, u string, maxChars int) (*search.Page, error) {
	return r.read(ctx, u, maxChars)
}

func (r *tracedReader) read(ctx context.Context, u string, maxChars int) (*search.Page, error) {
	attrs := make([]attribute.KeyValue, 0, 3)
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		attrs = append(attrs, AttrServerAddress.String(p.Hostname()))
	}
	if r.t.opts.RecordContent {
		attrs = append(attrs, AttrURLFull.String(u))
	}
	if maxChars > 0 {
		attrs = append(attrs, AttrMaxChars.Int(maxChars))
	}
	ctx, span := r.t.tracer.Start(ctx, "read_page", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	var (
		page *search.Page
		err  error
	)
	start := time.Now()
	if maxChars > 0 {
		page, err = r.inner.ReadUpTo(ctx, u, maxChars)
	} else {
		page, err = r.inner.Read(ctx, u)
	}
	if in := r.t.metrics; in != nil {
		in.reads.Add(ctx, 1)
		if err != nil {
			in.readDuration.Record(ctx, since(start), metric.WithAttributes(AttrErrorType.String(errorType(err))))
			in.failed(ctx, OpReadPage, err)
		} else {
			in.readDuration.Record(ctx, since(start))
		}
	}
	if err != nil {
		if apiErr, ok := errors.AsType[*search.APIError](err); ok && apiErr.Status != 0 {
			span.SetAttributes(AttrHTTPStatus.Int(apiErr.Status))
		}
		fail(span, err)
		return page, err
	}
	if page != nil {
		span.SetAttributes(AttrPageBytes.Int(len(page.Content)), AttrPageType.String(page.ContentType),
			AttrPageCacheHit.Bool(page.Cached))
		if page.Truncated {
			span.SetAttributes(AttrPageTruncated.Bool(true))
		}
		if page.Partial {
			span.SetAttributes(AttrPagePartial.Bool(true))
		}
	}
	return page, nil
}
