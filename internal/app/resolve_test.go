package app

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/citation"
)

// TestOpenBackendGeminiResolvesSources: the Gemini back end resolves its
// grounding redirects with one resolver per back end (shared by the runs a
// Pool serves), unless resolve_sources is off.
func TestOpenBackendGeminiResolvesSources(t *testing.T) {
	cfg := load(t, "", map[string]string{"GEMINI_API_KEY": "k"})
	assert.True(t, cfg.ResolveSources, "on by default")
	b, err := OpenBackend(context.Background(), cfg, Plan{Kind: BackendGemini}, nil)
	require.NoError(t, err)
	defer b.Close()
	gb, ok := b.Backend.(research.GeminiBackend)
	require.True(t, ok)
	assert.False(t, gb.KeepRedirects)
	require.NotNil(t, gb.Resolver)
	assert.True(t, gb.Resolver.IsRedirect(research.GroundingRedirectPrefix+"AbC"))
	// The Researcher finishes its sources through the back end: the
	// redirects resolved in the background (none yet here) show the pages.
	var finisher research.SourceFinisher = b
	src := []citation.Source{{URL: research.GroundingRedirectPrefix + "AbC", Title: "site.example"}}
	assert.Equal(t, src, finisher.FinishSources(src), "nothing resolved yet: the redirect stays")

	cfg = load(t, "resolve_sources: false\n", map[string]string{"GEMINI_API_KEY": "k"})
	b, err = OpenBackend(context.Background(), cfg, Plan{Kind: BackendGemini}, nil)
	require.NoError(t, err)
	defer b.Close()
	gb, ok = b.Backend.(research.GeminiBackend)
	require.True(t, ok)
	assert.True(t, gb.KeepRedirects)
	assert.Nil(t, gb.Resolver)
}
