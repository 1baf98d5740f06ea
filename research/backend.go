package research

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/search/netguard"
)

// GeminiBackend researches with Gemini's Google Search grounding: the
// research model (a Gemini model) searches and summarises in one call, and
// the citations come from the reply's grounding metadata — UTF-8 byte
// offsets per part, markers inserted from the end backwards, short-URL tokens
// for the long redirect URLs (see package citation).
type GeminiBackend struct {
	// ReferenceLabels reproduces the reference's source labels exactly
	// (dropping sources whose title has no '.'); off by default.
	ReferenceLabels bool
	// KeepRedirects leaves the sources as the grounding metadata gives
	// them: redirect URLs titled with a bare domain. By default they are
	// resolved to the real pages' URLs and titles (see SourceResolver).
	KeepRedirects bool
	// Resolver resolves the grounding redirects; nil means New gives each
	// Researcher its own, with the zero ResolverConfig (public addresses
	// only). Share one, built with the page reader's guard, to remember
	// redirects across Researchers.
	Resolver *SourceResolver
}

// Name implements Backend.
func (GeminiBackend) Name() string { return "gemini-grounding" }

// Research implements Backend.
func (b GeminiBackend) Research(ctx context.Context, model llm.Model, q Query) (Finding, error) {
	prompt := fmt.Sprintf(webSearcherPrompt, q.Text, q.Date, q.Text)
	resp, err := model.Generate(ctx, []schemas.Message{schemas.UserMessage(prompt)}, llm.GoogleSearch(), llm.Temperature(0))
	if err != nil {
		return Finding{}, err
	}
	text, sources := b.ground(ctx, resp, q.ID)
	f := Finding{Summary: text, Sources: sources}
	if len(sources) == 0 {
		f.Warnings = []Warning{newWarning(WarningNoResults, 1, q.Text, nil)}
	}
	return f, nil
}

// PageReader reads a web page; *search.Reader is one. A PageReader that
// also has ReadUpTo(ctx, url, maxChars) (*search.Reader does) is asked
// for only the MaxSourceChars the prompt uses, which spares converting
// the rest of a big page.
type PageReader interface {
	Read(ctx context.Context, url string) (*search.Page, error)
}

// prefixReader is a PageReader that can stop after maxChars characters.
type prefixReader interface {
	ReadUpTo(ctx context.Context, url string, maxChars int) (*search.Page, error)
}

// Defaults of SearchBackend.
const (
	DefaultMaxResults     = 5
	DefaultReadPages      = 3
	DefaultMaxSourceChars = 6000
)

// SearchBackend researches with any model and any Searcher — a web search
// API or a local corpus: search, read the top pages when the provider gave
// only snippets, and have the model summarise the sources, citing them by
// label ([S1], [S2] …); the labels become citation markers.
type SearchBackend struct {
	Searcher search.Searcher
	// Reader reads pages the Searcher returned only snippets for; nil means
	// snippets only.
	Reader PageReader
	// MaxResults is the number of results asked for (default 5).
	MaxResults int
	// ReadPages is how many of the top snippet-only results are read in full
	// (default 3; negative: none).
	ReadPages int
	// MaxSourceChars caps the text of one source in the prompt (default
	// 6000); a Query's Budget may shorten it further, fairly across the
	// sources.
	MaxSourceChars int
	// Logger receives page-read failures in detail (the snippet is used
	// instead; the Finding's Warnings count them).
	Logger *slog.Logger
}

// Name implements Backend.
func (b *SearchBackend) Name() string {
	if b.Searcher == nil {
		return "search"
	}
	return "search:" + b.Searcher.Name()
}

// Research implements Backend.
func (b *SearchBackend) Research(ctx context.Context, model llm.Model, q Query) (Finding, error) {
	if b.Searcher == nil {
		return Finding{}, fmt.Errorf("SearchBackend has no Searcher")
	}
	n := orDefault(b.MaxResults, DefaultMaxResults)
	results, err := recorded(ctx, b.Logger, callKey("search", b.Searcher.Name(), strconv.Itoa(n), q.Text), func() ([]search.Result, error) {
		return b.Searcher.Search(ctx, q.Text, search.Options{MaxResults: n})
	})
	if err != nil {
		if ctx.Err() != nil {
			return Finding{}, err
		}
		// The searcher retried already: the run goes on without this
		// query, and says so (ErrSearchesFailed when no search found
		// anything).
		if b.Logger != nil {
			b.Logger.WarnContext(ctx, "a search failed; the run goes on without it", "query", q.Text, "err", err)
		}
		return Finding{Summary: fmt.Sprintf("The search for %q failed.", q.Text),
			Warnings: []Warning{newWarning(WarningSearchFailed, 1, q.Text, []string{strconv.Quote(q.Text) + ": " + err.Error()})}}, nil
	}
	if len(results) == 0 {
		return Finding{Summary: fmt.Sprintf("The search for %q found no results.", q.Text),
			Warnings: []Warning{newWarning(WarningNoResults, 1, q.Text, nil)}}, nil
	}
	limit := orDefault(b.MaxSourceChars, DefaultMaxSourceChars)
	warnings := b.readPages(ctx, q.Text, results, limit)
	snippetsOnly := !slices.ContainsFunc(results, func(r search.Result) bool { return r.Content != "" })

	sources := make([]citation.Source, len(results))
	texts := make([]string, len(results))
	for i, res := range results {
		sources[i] = citation.ForResult(res.Title, res.URL, q.ID, i)
		texts[i] = res.Content
		if texts[i] == "" {
			texts[i] = res.Snippet
		}
		texts[i] = clip(texts[i], limit)
	}
	prompt := summaryPrompt(q, results, texts)
	if q.Budget > 0 && len(prompt) > q.Budget*CharsPerToken {
		// The sources' text shares what the rest of the prompt leaves of
		// the budget; their labels, titles and URLs stay as they are.
		rest := len(summaryPrompt(q, results, make([]string, len(results))))
		avail := max(q.Budget*CharsPerToken-rest, minSourceChars*len(results))
		prompt = summaryPrompt(q, results, fitSources(texts, avail))
	}
	resp, err := model.Generate(ctx, []schemas.Message{schemas.UserMessage(prompt)}, llm.Temperature(0))
	if err != nil {
		return Finding{}, err
	}
	text, _ := citation.FromLabels(resp.Content, sources)
	return Finding{Summary: text, Sources: sources, Warnings: warnings, SnippetsOnly: snippetsOnly}, nil
}

// summaryPrompt is the prompt that summarises results, each with its text
// (a page, or its snippet) under its label S1, S2, ….
func summaryPrompt(q Query, results []search.Result, texts []string) string {
	var listing strings.Builder
	for i, res := range results {
		fmt.Fprintf(&listing, "<source label=\"S%d\" title=%q url=%q>\n%s\n</source>\n\n", i+1, oneLine(res.Title), res.URL, untrusted.Escape(texts[i]))
	}
	return fmt.Sprintf(summarizerPrompt, q.Text, oneLine(q.Topic), q.Date, listing.String())
}

// Warnings implements Warner: the files a local corpus did not index
// (a Searcher that is a search.Skipper).
func (b *SearchBackend) Warnings() []Warning {
	sk, ok := b.Searcher.(search.Skipper)
	if !ok {
		return nil
	}
	if skipped := sk.Skipped(); len(skipped) > 0 {
		return []Warning{newWarning(WarningFilesSkipped, len(skipped), "", skipped)}
	}
	return nil
}

// readPages fills in the Content of the top results that have only a
// snippet, a few at a time. A page that cannot be read keeps its snippet,
// and the warnings returned say so: pages the network guard refused, and
// pages that failed otherwise. Only the first maxChars characters of each
// page are needed.
func (b *SearchBackend) readPages(ctx context.Context, query string, results []search.Result, maxChars int) []Warning {
	n := b.ReadPages
	if n == 0 {
		n = DefaultReadPages
	}
	if b.Reader == nil || n < 0 {
		return nil
	}
	var (
		wg                  sync.WaitGroup
		mu                  sync.Mutex
		refused, unreadable []string
	)
	read := func(r *search.Result) {
		page, err := recorded(ctx, b.Logger, callKey("read", r.URL, strconv.Itoa(maxChars)), func() (*search.Page, error) {
			if pr, ok := b.Reader.(prefixReader); ok {
				return pr.ReadUpTo(ctx, r.URL, maxChars)
			}
			return b.Reader.Read(ctx, r.URL)
		})
		if err != nil {
			if b.Logger != nil {
				b.Logger.DebugContext(ctx, "reading a search result failed; using its snippet", "url", r.URL, "err", err)
			}
			if ctx.Err() != nil {
				return // the run stops: no page failed
			}
			mu.Lock()
			if errors.Is(err, netguard.ErrBlocked) {
				refused = append(refused, r.URL)
			} else {
				unreadable = append(unreadable, r.URL)
			}
			mu.Unlock()
			return
		}
		r.Content = page.Content
		if r.Title == "" {
			r.Title = page.Title
		}
	}
	// The pages are read at once; the last on this goroutine, which has
	// the stack for it already (a new goroutine's grows as it reads).
	var last *search.Result
	for i := range results {
		if n == 0 {
			break
		}
		if results[i].Content != "" {
			continue
		}
		n--
		if r := last; r != nil {
			wg.Go(func() { read(r) })
		}
		last = &results[i]
	}
	if last != nil {
		read(last)
	}
	wg.Wait()
	var out []Warning
	if len(refused) > 0 {
		slices.Sort(refused)
		out = append(out, newWarning(WarningPagesRefused, len(refused), query, refused))
	}
	if len(unreadable) > 0 {
		slices.Sort(unreadable)
		out = append(out, newWarning(WarningPagesUnreadable, len(unreadable), query, unreadable))
	}
	return out
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncated
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
