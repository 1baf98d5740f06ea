package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/search/local"
	"github.com/deepgraph/deepgraph/search/netguard"
)

// BackendKind names the kinds of research back end.
type BackendKind string

// The back ends, in the order they are considered.
const (
	BackendCorpus BackendKind = "corpus" // a local corpus (search/local); no web access
	BackendSearch BackendKind = "search" // web search providers + page reading behind the SSRF guard
	BackendGemini BackendKind = "gemini" // Gemini's Google Search grounding
)

// Plan is the chosen back end and why.
type Plan struct {
	Kind BackendKind
	// Providers are the web search providers, in the order they are tried
	// (BackendSearch).
	Providers []string
	// Corpus is the corpus directory (BackendCorpus).
	Corpus string
	// Why says how the choice was made, for `research config` and -v.
	Why string
}

// HowToConfigureSearch is the help shown when no search back end can be
// chosen.
const HowToConfigureSearch = `No search back end is configured. Choose one:

  SEARXNG_URL        a SearXNG instance, e.g. http://localhost:8888
                     (settings.yml must list json under search.formats)
  TAVILY_API_KEY     Tavily (https://tavily.com)
  BRAVE_API_KEY      Brave Search API (https://brave.com/search/api/)
  --corpus DIR       search your own Markdown, text and HTML files instead
                     of the web
  GEMINI_API_KEY     with a Gemini research model (the default when this key
                     is set), Gemini's Google Search grounding does the search

The same settings go in the config file as searxng_url, tavily_api_key,
brave_api_key, corpus and gemini_api_key; --search picks among them.
`

// ChooseBackend decides the research back end from a configuration:
//
//  1. corpus set: the local corpus (no web access at all);
//  2. search lists web providers (or is auto and some provider's URL or key
//     is set): those providers, in order, with pages read behind the SSRF
//     guard;
//  3. search is gemini, or auto with a Gemini research model: Google Search
//     grounding;
//  4. otherwise a setup error explaining how to configure search
//     (HowToConfigureSearch).
//
// researchSpec is the research role's model spec.
func ChooseBackend(cfg *config.Config, researchSpec string) (Plan, error) {
	if cfg.Corpus != "" {
		return Plan{Kind: BackendCorpus, Corpus: cfg.Corpus, Why: "corpus is set (" + cfg.Source("corpus").String() + ")"}, nil
	}
	provider, _, _ := llm.ParseSpec(researchSpec)
	geminiModel := provider == llm.ProviderGemini
	switch {
	case cfg.SearchGemini():
		if !geminiModel {
			return Plan{}, setupErr("search is gemini (Google Search grounding), which needs a Gemini research model, but research_model is %s: "+
				"set --research-model gemini:gemini-2.5-flash, or choose a web search provider with --search", orNone(researchSpec))
		}
		return Plan{Kind: BackendGemini, Why: "search is gemini (" + cfg.Source("search").String() + ")"}, nil
	case cfg.SearchAuto():
		if ps := cfg.ConfiguredWebProviders(); len(ps) > 0 {
			return Plan{Kind: BackendSearch, Providers: ps, Why: "search is auto and " + setVars(ps) + " set"}, nil
		}
		if geminiModel {
			return Plan{Kind: BackendGemini, Why: "search is auto, no web search provider is configured and the research model is Gemini"}, nil
		}
		return Plan{}, &setupError{fmt.Errorf("%w (the research model %s has no built-in search)", errNoSearch, orNone(researchSpec))}
	default:
		for _, p := range cfg.Search {
			if !contains(cfg.ConfiguredWebProviders(), p) {
				return Plan{}, setupErr("search lists %s, but %s is not set (config key %s)", p, config.ProviderVariable(p), providerKey(p))
			}
		}
		return Plan{Kind: BackendSearch, Providers: cfg.Search, Why: "search is " + strings.Join(cfg.Search, ",") + " (" + cfg.Source("search").String() + ")"}, nil
	}
}

// errNoSearch is the cause of the setup error when no back end is chosen.
var errNoSearch = errors.New("no search back end is configured: set SEARXNG_URL, TAVILY_API_KEY or BRAVE_API_KEY, use --corpus DIR, or use a Gemini research model with GEMINI_API_KEY for Google Search grounding")

// IsNoSearch reports whether err is the failure to choose any search back
// end, for which HowToConfigureSearch is the help.
func IsNoSearch(err error) bool { return errors.Is(err, errNoSearch) }

func orNone(s string) string {
	if s == "" {
		return "not set"
	}
	return s
}

func setVars(ps []string) string {
	vars := make([]string, len(ps))
	for i, p := range ps {
		vars[i] = config.ProviderVariable(p)
	}
	if len(vars) == 1 {
		return vars[0] + " is"
	}
	return strings.Join(vars, ", ") + " are"
}

func providerKey(p string) string {
	switch p {
	case config.ProviderSearXNG:
		return "searxng_url"
	case config.ProviderTavily:
		return "tavily_api_key"
	case config.ProviderBrave:
		return "brave_api_key"
	}
	return p
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// SearchHTTP is the search providers' transport policy from a Config. Each
// provider built with it has its own bound on searches in flight
// (search_concurrency, none by default; never below a round's queries).
func SearchHTTP(cfg *config.Config, logger *slog.Logger) search.HTTPOptions {
	return search.HTTPOptions{HTTPClient: &http.Client{Transport: providerTransport()}, MaxRetries: retries(cfg.Retries),
		MaxConcurrency: searchLimit(cfg), Timeout: cfg.SearchTimeout, RetryBackoff: cfg.RetryBackoff, Logger: logger}
}

// WebSearcher builds the chain of the named web providers from cfg.
func WebSearcher(cfg *config.Config, names []string, logger *slog.Logger) (*search.Chain, error) {
	httpOpts := SearchHTTP(cfg, logger)
	var ps []search.Searcher
	for _, name := range names {
		var (
			s   search.Searcher
			err error
		)
		switch name {
		case config.ProviderSearXNG:
			s, err = search.NewSearXNG(search.SearXNGConfig{BaseURL: cfg.SearXNGURL, HTTPOptions: httpOpts})
		case config.ProviderTavily:
			s, err = search.NewTavily(search.TavilyConfig{APIKey: cfg.TavilyAPIKey.Reveal(), BaseURL: cfg.TavilyBaseURL, HTTPOptions: httpOpts})
		case config.ProviderBrave:
			s, err = search.NewBrave(search.BraveConfig{APIKey: cfg.BraveAPIKey.Reveal(), BaseURL: cfg.BraveBaseURL, HTTPOptions: httpOpts})
		default:
			err = fmt.Errorf("unknown search provider %q", name)
		}
		if err != nil {
			return nil, &setupError{fmt.Errorf("search provider %s: %w", name, err)}
		}
		ps = append(ps, s)
	}
	chain := search.NewChain(ps...)
	if logger != nil {
		chain = chain.WithLogger(logger)
	}
	return chain, nil
}

// PageReader builds the page reader behind the SSRF guard: public addresses
// only unless allow_private_urls is set (cloud-metadata addresses stay
// refused either way). Its bound on pages read at once is page_concurrency
// (none by default; never below a round's page reads).
func PageReader(cfg *config.Config, logger *slog.Logger) (*search.Reader, error) {
	r, err := search.NewReader(search.ReaderConfig{
		Guard:          guardConfig(cfg),
		MaxConcurrency: pageLimit(cfg),
		Timeout:        cfg.FetchTimeout,
		MaxRetries:     retries(cfg.Retries),
		RetryBackoff:   cfg.RetryBackoff,
		Logger:         logger,
	})
	if err != nil {
		return nil, &setupError{fmt.Errorf("page reader: %w", err)}
	}
	return r, nil
}

// guardConfig is the SSRF policy of everything that fetches a URL a page
// or a model chose: the page reader and the grounding-redirect resolver.
func guardConfig(cfg *config.Config) netguard.Config {
	return netguard.Config{AllowPrivate: cfg.AllowPrivateURLs}
}

// OpenCorpus opens (indexing what changed) the corpus directory of cfg.
func OpenCorpus(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*local.Index, error) {
	info, err := os.Stat(cfg.Corpus)
	if err != nil || !info.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return nil, &setupError{cfg.Invalid("corpus", cfg.Corpus, "an existing directory of Markdown, text or HTML files", err)}
	}
	opts := []local.Option{}
	if cfg.CorpusCacheDir != "" {
		opts = append(opts, local.WithCacheDir(cfg.CorpusCacheDir))
	}
	if logger != nil {
		opts = append(opts, local.WithLogger(logger))
	}
	ix, err := local.Open(ctx, cfg.Corpus, opts...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("opening the corpus %s: %w", cfg.Corpus, err)
	}
	return ix, nil
}

// Backend is a research back end ready to run, with what it holds open.
type Backend struct {
	research.Backend
	Plan Plan
	// Searcher is the search the back end uses (nil for Gemini grounding),
	// for tools that search too.
	Searcher search.Searcher
	closers  []func()
}

// FinishSources implements research.SourceFinisher for the back end it
// holds (Gemini's: its grounding redirects resolved in the background).
func (b *Backend) FinishSources(gathered []citation.Source) []citation.Source {
	if f, ok := b.Backend.(research.SourceFinisher); ok {
		return f.FinishSources(gathered)
	}
	return gathered
}

// Close releases what the back end holds (the corpus index, idle
// connections).
func (b *Backend) Close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
	b.closers = nil
}

// OpenBackend builds the back end a Plan names.
func OpenBackend(ctx context.Context, cfg *config.Config, plan Plan, logger *slog.Logger) (*Backend, error) {
	b := &Backend{Plan: plan}
	switch plan.Kind {
	case BackendCorpus:
		ix, err := OpenCorpus(ctx, cfg, logger)
		if err != nil {
			return nil, err
		}
		b.closers = append(b.closers, func() { _ = ix.Close() })
		b.Searcher = ix
		b.Backend = &research.SearchBackend{Searcher: ix, ReadPages: -1, Logger: logger}
	case BackendSearch:
		chain, err := WebSearcher(cfg, plan.Providers, logger)
		if err != nil {
			return nil, err
		}
		reader, err := PageReader(cfg, logger)
		if err != nil {
			return nil, err
		}
		b.closers = append(b.closers, reader.Close)
		b.Searcher = chain
		b.Backend = &research.SearchBackend{Searcher: chain, Reader: reader, Logger: logger}
	case BackendGemini:
		gb := research.GeminiBackend{KeepRedirects: !cfg.ResolveSources}
		if cfg.ResolveSources {
			res, err := research.NewSourceResolver(research.ResolverConfig{Guard: guardConfig(cfg), Logger: logger})
			if err != nil {
				return nil, &setupError{fmt.Errorf("source resolver: %w", err)}
			}
			b.closers = append(b.closers, res.Close)
			gb.Resolver = res
		}
		b.Backend = gb
	default:
		return nil, setupErr("unknown back end %q", plan.Kind)
	}
	return b, nil
}
