package search

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stubSearcher answers with fixed results or a fixed error, counting calls.
type stubSearcher struct {
	name    string
	results []Result
	err     error
	calls   atomic.Int32
	// onCall runs before answering (to cancel a context mid-chain, say).
	onCall func()
}

func (s *stubSearcher) Name() string { return s.name }

func (s *stubSearcher) Search(ctx context.Context, _ string, _ Options) ([]Result, error) {
	s.calls.Add(1)
	if s.onCall != nil {
		s.onCall()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.results, s.err
}

func TestChain(t *testing.T) {
	hit := []Result{{Title: "hit", URL: "https://example.com/", Provider: "second"}}
	unavailable := &APIError{Provider: "first", Status: 503, Message: "down"}
	authErr := &APIError{Provider: "second", Status: 401, KeyEnv: EnvTavilyAPIKey, Message: "bad key"}
	tests := []struct {
		name      string
		chain     []*stubSearcher
		want      []Result
		wantCalls []int32
		wantErrIs []error
		wantMsg   []string
	}{
		{name: "first answers",
			chain: []*stubSearcher{{name: "first", results: hit}, {name: "second"}},
			want:  hit, wantCalls: []int32{1, 0}},
		{name: "falls back on failure",
			chain: []*stubSearcher{{name: "first", err: unavailable}, {name: "second", results: hit}},
			want:  hit, wantCalls: []int32{1, 1}},
		{name: "empty is an answer, not a failure",
			chain: []*stubSearcher{{name: "first", results: []Result{}}, {name: "second", results: hit}},
			want:  []Result{}, wantCalls: []int32{1, 0}},
		{name: "nil results become an empty slice",
			chain: []*stubSearcher{{name: "first"}},
			want:  []Result{}, wantCalls: []int32{1}},
		{name: "all fail",
			chain:     []*stubSearcher{{name: "first", err: unavailable}, {name: "second", err: authErr}, {name: "third", err: errors.New("boom")}},
			wantCalls: []int32{1, 1, 1},
			wantErrIs: []error{ErrUnavailable, ErrAuth},
			wantMsg:   []string{"all 3 providers failed", "first: Service Unavailable (503): down", "second: TAVILY_API_KEY was rejected (401): bad key", "third: boom"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			providers := make([]Searcher, len(tt.chain))
			for i, s := range tt.chain {
				providers[i] = s
			}
			got, err := NewChain(providers...).Search(context.Background(), "q", Options{})
			for i, s := range tt.chain {
				assert.Equal(t, tt.wantCalls[i], s.calls.Load(), "calls of %s", s.name)
			}
			if tt.wantMsg != nil {
				require.Error(t, err)
				var ce *ChainError
				require.ErrorAs(t, err, &ce)
				assert.Len(t, ce.Errors, len(tt.chain))
				for _, target := range tt.wantErrIs {
					assert.ErrorIs(t, err, target)
				}
				for _, m := range tt.wantMsg {
					assert.Contains(t, err.Error(), m)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestChainStopsOnCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	first := &stubSearcher{name: "first", onCall: cancel}
	second := &stubSearcher{name: "second", results: []Result{{URL: "https://example.com/"}}}
	_, err := NewChain(first, second).Search(ctx, "q", Options{})
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int32(0), second.calls.Load(), "a cancelled search does not fall back")

	done, stop := context.WithCancel(context.Background())
	stop()
	third := &stubSearcher{name: "third"}
	_, err = NewChain(third).Search(done, "q", Options{})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int32(0), third.calls.Load())
}

func TestChainCancellationKeepsEarlierFailures(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	first := &stubSearcher{name: "first", err: &APIError{Provider: "first", Status: 500, Message: "down"}}
	second := &stubSearcher{name: "second", onCall: cancel}
	third := &stubSearcher{name: "third"}
	_, err := NewChain(first, second, third).Search(ctx, "q", Options{})
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "first: Internal Server Error (500): down")
	assert.Equal(t, int32(0), third.calls.Load())
}

func TestChainNameAndEmpty(t *testing.T) {
	c := NewChain(&stubSearcher{name: "searxng"}, nil, &stubSearcher{name: "tavily"})
	assert.Equal(t, "searxng,tavily", c.Name())
	assert.Len(t, c.Providers(), 2)
	_, err := NewChain().Search(context.Background(), "q", Options{})
	require.ErrorIs(t, err, ErrNotConfigured)
	assert.Contains(t, err.Error(), "searxng, tavily, brave")
}

func TestFromEnv(t *testing.T) {
	t.Setenv(EnvSearXNGURL, "")
	t.Setenv(EnvTavilyAPIKey, "")
	t.Setenv(EnvBraveAPIKey, "")

	for name, env := range map[string]string{"searxng": EnvSearXNGURL, "tavily": EnvTavilyAPIKey, "brave": EnvBraveAPIKey} {
		_, err := ProviderFromEnv(name, HTTPOptions{})
		require.ErrorIs(t, err, ErrNotConfigured, name)
		assert.Contains(t, err.Error(), env, "the error names the variable")
	}
	_, err := ProviderFromEnv("bing", HTTPOptions{})
	require.ErrorIs(t, err, ErrNotConfigured)
	assert.Contains(t, err.Error(), `unknown provider "bing"`)

	_, err = ChainFromEnv(HTTPOptions{})
	require.ErrorIs(t, err, ErrNotConfigured)
	assert.Contains(t, err.Error(), "SEARXNG_URL, TAVILY_API_KEY, BRAVE_API_KEY")

	t.Setenv(EnvTavilyAPIKey, "tvly-from-env")
	t.Setenv(EnvBraveAPIKey, "brave-from-env")
	c, err := ChainFromEnv(HTTPOptions{})
	require.NoError(t, err)
	assert.Equal(t, "tavily,brave", c.Name(), "unset providers are left out, order kept")
	c, err = ChainFromEnv(HTTPOptions{}, "brave", "Tavily")
	require.NoError(t, err)
	assert.Equal(t, "brave,tavily", c.Name())

	tv, err := TavilyFromEnv(TavilyConfig{})
	require.NoError(t, err)
	assert.Equal(t, "tvly-from-env", tv.cfg.APIKey)
	tv, err = TavilyFromEnv(TavilyConfig{APIKey: "tvly-explicit"})
	require.NoError(t, err)
	assert.Equal(t, "tvly-explicit", tv.cfg.APIKey, "explicit configuration wins over the environment")

	t.Setenv(EnvSearXNGURL, "not a url")
	_, err = ChainFromEnv(HTTPOptions{})
	require.Error(t, err, "a set but unusable variable is an error, not a skip")
	assert.Contains(t, err.Error(), "searxng")

	t.Setenv(EnvSearXNGURL, "http://localhost:8888")
	s, err := SearXNGFromEnv(SearXNGConfig{})
	require.NoError(t, err)
	assert.Equal(t, "http://localhost:8888", s.base.String())
}
