package research

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm/fake"
)

// TestNewResolvesGeminiSourcesByDefault: each Researcher with a Gemini
// back end gets its own resolver (its own cache); KeepRedirects or a
// resolver of the caller's is left alone, and so are other back ends.
func TestNewResolvesGeminiSourcesByDefault(t *testing.T) {
	resolverOf := func(b Backend) *SourceResolver {
		t.Helper()
		r, err := New(Config{QueryModel: fake.New(), Backend: b})
		require.NoError(t, err)
		switch gb := r.cfg.Backend.(type) {
		case GeminiBackend:
			return gb.Resolver
		case *GeminiBackend:
			return gb.Resolver
		}
		return nil
	}
	a, b := resolverOf(GeminiBackend{}), resolverOf(GeminiBackend{})
	require.NotNil(t, a)
	require.NotNil(t, b)
	assert.NotSame(t, a, b, "one resolver per Researcher")
	assert.True(t, a.IsRedirect(GroundingRedirectPrefix+"AbC"))
	assert.False(t, a.IsRedirect("https://example.com/"))

	ptr := &GeminiBackend{}
	assert.NotNil(t, resolverOf(ptr))
	assert.Nil(t, ptr.Resolver, "the caller's back end is not modified")

	assert.Nil(t, resolverOf(GeminiBackend{KeepRedirects: true}))
	own, err := NewSourceResolver(ResolverConfig{})
	require.NoError(t, err)
	assert.Same(t, own, resolverOf(GeminiBackend{Resolver: own}))
}
