package app

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/telemetry"
	"github.com/deepgraph/deepgraph/tools/browser"
)

// Pool opens models and research back ends once and shares them among
// runs — a server's. Sharing them shares their limits, as the providers'
// quotas are shared: a provider's max_concurrency bounds the model calls in
// flight of every run together, search_concurrency a search provider's
// searches, page_concurrency the pages read (all off by default; see
// limits.go). A corpus is
// indexed once, not per run.
//
// The models and back ends are opened with the configuration of the first
// run that needs them; runs differ in which they use (their models,
// search), not in keys or limits.
type Pool struct {
	logger *slog.Logger
	models *modelCache

	mu       sync.Mutex
	backends map[string]*Backend // by planKey
	browsers *browser.Slots      // see BrowserSlots
}

// NewPool returns an empty pool; logger may be nil.
func NewPool(logger *slog.Logger) *Pool {
	return &Pool{logger: logger, models: newModelCache(), backends: map[string]*Backend{}}
}

// Model returns the model of spec, opening it with cfg the first time.
func (p *Pool) Model(ctx context.Context, cfg *config.Config, spec string) (llm.Model, error) {
	return p.models.open(ctx, cfg, spec, p.logger)
}

// Research builds a researcher for one run with cfg (its models, search,
// corpus and limits), taking models and the back end from the pool. Its
// Close leaves them open: Pool.Close closes them. Under a context carrying
// telemetry (telemetry.ContextWith), this run's models, searches and page
// reads are spans; the pooled ones stay unwrapped.
func (p *Pool) Research(ctx context.Context, cfg *config.Config, cp graph.Checkpointer) (*Research, error) {
	return p.ResearchWrapped(ctx, cfg, cp, BackendWrap{})
}

func (p *Pool) backend(ctx context.Context, cfg *config.Config, plan Plan) (*Backend, error) {
	key := string(plan.Kind) + "\x00" + strings.Join(plan.Providers, ",") + "\x00" + plan.Corpus
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.backends[key]; ok {
		return b, nil
	}
	b, err := OpenBackend(ctx, cfg, plan, p.logger)
	if err != nil {
		return nil, err
	}
	p.backends[key] = b
	return b, nil
}

// Close closes the back ends.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, b := range p.backends {
		b.Close()
		delete(p.backends, k)
	}
}

// BackendWrap wraps a run's searcher and page reader — an eval records
// what they return (eval.Recorder). A nil function leaves its part as it
// is.
type BackendWrap struct {
	Searcher func(search.Searcher) search.Searcher
	Reader   func(research.PageReader) research.PageReader
}

// ResearchWrapped is Research with this run's searcher and page reader
// wrapped by wrap: on a copy of the pooled back end, which other runs keep
// using unwrapped. Gemini grounding has neither to wrap.
func (p *Pool) ResearchWrapped(ctx context.Context, cfg *config.Config, cp graph.Checkpointer, wrap BackendWrap) (*Research, error) {
	models, err := p.models.models(ctx, cfg, p.logger)
	if err != nil {
		return nil, err
	}
	tel := telemetry.From(ctx)
	traceModels(tel, models)
	plan, err := ChooseBackend(cfg, models.Spec(llm.RoleResearch))
	if err != nil {
		return nil, err
	}
	backend, err := p.backend(ctx, cfg, plan)
	if err != nil {
		return nil, err
	}
	return newResearch(cfg, models, wrappedBackend(tracedBackend(tel, backend), wrap), cp, false)
}

// wrappedBackend returns a copy of b with its searcher and page reader
// wrapped.
func wrappedBackend(b *Backend, wrap BackendWrap) *Backend {
	if wrap.Searcher == nil && wrap.Reader == nil {
		return b
	}
	out := *b
	sb, ok := b.Backend.(*research.SearchBackend)
	if !ok {
		return &out
	}
	w := *sb
	if wrap.Searcher != nil && sb.Searcher != nil {
		w.Searcher = wrap.Searcher(sb.Searcher)
		out.Searcher = w.Searcher
	}
	if wrap.Reader != nil && sb.Reader != nil {
		w.Reader = wrap.Reader(sb.Reader)
	}
	out.Backend = &w
	return &out
}
