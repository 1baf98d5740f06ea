package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/search"
)

// A pool shares models and back ends among runs: the second run of the
// same settings opens nothing, and closing a run leaves the shared back end
// open for the next.
func TestPoolShares(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# Checkpoints\n\nRuns resume from the last checkpoint.\n"), 0o600))
	cfg := load(t, "", map[string]string{"OPENAI_API_KEY": "k"}, "--model", "openai:gpt-4.1-mini", "--corpus", dir, "--corpus-cache-dir", t.TempDir())
	pool := NewPool(nil)
	defer pool.Close()
	ctx := context.Background()

	a, err := pool.Research(ctx, cfg, nil)
	require.NoError(t, err)
	a.Close()
	b, err := pool.Research(ctx, cfg, nil)
	require.NoError(t, err)
	defer b.Close()
	assert.Same(t, a.Backend, b.Backend, "one back end (one corpus index) for every run")
	assert.Same(t, a.Models.Model(llm.RoleAnswer), b.Models.Model(llm.RoleAnswer), "one model, so one provider limit")
	_, err = b.Backend.Searcher.Search(ctx, "checkpoint", search.Options{})
	require.NoError(t, err, "the first run's Close left the shared back end open")

	other := *cfg
	other.AnswerModel = "openai:gpt-4.1"
	c, err := pool.Research(ctx, &other, nil)
	require.NoError(t, err)
	assert.Equal(t, "openai:gpt-4.1", c.Models.Spec(llm.RoleAnswer))
	assert.NotSame(t, a.Models.Model(llm.RoleAnswer), c.Models.Model(llm.RoleAnswer))
	assert.Same(t, a.Models.Model(llm.RoleQuery), c.Models.Model(llm.RoleQuery))

	m, err := pool.Model(ctx, cfg, "openai:gpt-4.1-mini")
	require.NoError(t, err)
	assert.Same(t, a.Models.Model(llm.RoleQuery), m)
}

// namedSearcher is a searcher that only has a name.
type namedSearcher string

func (n namedSearcher) Name() string { return string(n) }

func (namedSearcher) Search(context.Context, string, search.Options) ([]search.Result, error) {
	return nil, nil
}

func TestWrappedBackendLeavesThePooledOneAlone(t *testing.T) {
	pooled := &Backend{Backend: &research.SearchBackend{Searcher: namedSearcher("corpus")}, Searcher: namedSearcher("corpus")}
	wrapped := wrappedBackend(pooled, BackendWrap{Searcher: func(s search.Searcher) search.Searcher { return namedSearcher("recorded " + s.Name()) }})
	assert.Equal(t, "recorded corpus", wrapped.Backend.(*research.SearchBackend).Searcher.Name())
	assert.Equal(t, "recorded corpus", wrapped.Searcher.Name())
	assert.Equal(t, "corpus", pooled.Backend.(*research.SearchBackend).Searcher.Name(), "the pooled back end is not changed")
	assert.Nil(t, wrapped.Backend.(*research.SearchBackend).Reader, "no reader to wrap")
	gemini := &Backend{Backend: research.GeminiBackend{}}
	assert.Equal(t, research.GeminiBackend{}, wrappedBackend(gemini, BackendWrap{Searcher: func(s search.Searcher) search.Searcher { return s }}).Backend)
}
