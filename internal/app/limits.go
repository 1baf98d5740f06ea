package app

import (
	"net/http"
	"sync"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/research"
)

// limit is a configured bound set (0: none) raised to need, what one
// research round puts in flight at once.
func limit(set, need int) int {
	if set <= 0 {
		return 0
	}
	return max(set, need)
}

// modelLimit is the bound on one model provider's calls in flight: a
// round's research calls run at once, one per query.
func modelLimit(cfg *config.Config) int { return limit(cfg.MaxConcurrency, cfg.InitialQueries) }

// searchLimit is the bound on one search provider's searches in flight:
// one per query of a round.
func searchLimit(cfg *config.Config) int { return limit(cfg.SearchConcurrency, cfg.InitialQueries) }

// pageLimit is the bound on pages read at once: a round reads up to
// research.DefaultReadPages per query.
func pageLimit(cfg *config.Config) int {
	return limit(cfg.PageConcurrency, cfg.InitialQueries*research.DefaultReadPages)
}

// providerTransport is the connection pool under the model and search
// providers' clients: http.DefaultTransport's settings, keeping more idle
// connections per host, so that the calls of a round (or of many runs) to
// one provider reuse their connections instead of opening new ones each
// time (http.DefaultTransport keeps 2 per host). Many runs at once put
// thousands of calls in flight to one provider over HTTP/1.1; an idle pool
// smaller than that closes connections after each wave of calls and dials
// them again for the next (dialing and closing were about a sixth of the
// CPU of BenchmarkConcurrentRuns' 1,000 runs, pages included). Idle
// connections close after IdleConnTimeout (90 s); over HTTPS a provider
// usually multiplexes the calls on a few HTTP/2 connections anyway.
var providerTransport = sync.OnceValue(func() http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t = t.Clone()
	t.MaxIdleConns = 0 // no bound but per host
	t.MaxIdleConnsPerHost = 4096
	return t
})
