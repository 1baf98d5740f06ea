package eval_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/eval"
	"github.com/deepgraph/deepgraph/internal/fakeproviders"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/search/local"
)

// promptModel answers from the prompt alone (fakeproviders' eval
// script): a research model, careful or careless, or the judge.
type promptModel struct {
	judge    bool
	careless bool
	calls    atomic.Int64
	prompt   int // tokens per call it reports
}

func (m *promptModel) Generate(ctx context.Context, msgs []schemas.Message, opts ...llm.Option) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.calls.Add(1)
	req := llm.NewRequest(opts...)
	var prompt strings.Builder
	for _, msg := range msgs {
		prompt.WriteString(msg.Content)
		prompt.WriteString("\n")
	}
	var (
		reply string
		ok    bool
	)
	if m.judge {
		reply, ok = fakeproviders.JudgeReply(req.SchemaName, prompt.String())
	} else {
		reply, ok = fakeproviders.ResearchReply(req.SchemaName, prompt.String(), m.careless)
	}
	if !ok {
		return nil, fmt.Errorf("promptModel: no reply for a %q prompt: %.200s", req.SchemaName, prompt.String())
	}
	return &llm.Response{Content: reply, Usage: llm.Usage{PromptTokens: 100 + m.prompt, CompletionTokens: 20, CachedTokens: 10}}, nil
}

// corpus opens testdata/corpus with its index in a temporary directory.
func corpus(t *testing.T) (*local.Index, string) {
	t.Helper()
	dir, err := filepath.Abs("testdata/corpus")
	require.NoError(t, err)
	ix, err := local.Open(context.Background(), dir, local.WithCacheDir(t.TempDir()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = ix.Close() })
	return ix, dir
}

// questions reads testdata/questions.jsonl.
func questions(t *testing.T) []eval.Question {
	t.Helper()
	f, err := os.Open("testdata/questions.jsonl")
	require.NoError(t, err)
	defer f.Close()
	qs, err := eval.ReadQuestions(f, eval.FormatJSONL)
	require.NoError(t, err)
	return qs
}

// corpusRunner researches over the corpus with model, recording the
// source texts; price prices its tokens (USD per call's usage).
type corpusRunner struct {
	ix    *local.Index
	model llm.Model
	price llm.Price
	runs  atomic.Int64
	// block, when set, is waited on by each run after it starts (a kill
	// test stops the eval there).
	mu      sync.Mutex
	started func(q eval.Question)
}

func (c *corpusRunner) Run(ctx context.Context, t eval.Task) (*eval.Outcome, error) {
	q := t.Question
	c.runs.Add(1)
	c.mu.Lock()
	started := c.started
	c.mu.Unlock()
	if started != nil {
		started(q)
	}
	rec := eval.NewRecorder()
	r, err := research.New(research.Config{QueryModel: c.model, InitialQueries: 1, MaxLoops: 1,
		Backend: &research.SearchBackend{Searcher: rec.Searcher(c.ix), ReadPages: -1, MaxResults: 3}})
	if err != nil {
		return nil, err
	}
	rep, err := r.Run(ctx, q.Question)
	if err != nil {
		return nil, err
	}
	cost := c.price.Cost(rep.Usage.Total().Usage)
	return &eval.Outcome{Report: rep, Texts: rec.Texts(), CostUSD: &cost, Models: map[string]string{"query": "fake:model"}}, nil
}

// pageReader reads pages from a map.
type pageReader map[string]string

func (p pageReader) Read(_ context.Context, u string) (*search.Page, error) {
	text, ok := p[u]
	if !ok {
		return nil, fmt.Errorf("no page %s", u)
	}
	return &search.Page{URL: u, Content: text}, nil
}
