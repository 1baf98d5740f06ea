package research_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/search"
)

// brokenStream is what a provider reports for a stream cut off after its 200
// once its own retries are spent.
var brokenStream = &llm.APIError{Provider: "fake", Message: "the event stream broke off",
	Err: fmt.Errorf("%w: connection reset", llm.ErrStreamBroken)}

// flakyBackend fails its first call with err, then researches like scripted.
type flakyBackend struct {
	scripted
	err   error
	calls atomic.Int32
}

func (b *flakyBackend) Research(ctx context.Context, model llm.Model, q research.Query) (research.Finding, error) {
	if b.calls.Add(1) == 1 {
		return research.Finding{}, fmt.Errorf("summarising: %w", b.err)
	}
	return b.scripted.Research(ctx, model, q)
}

// script is a one-round run: one query, sufficient, an answer.
func script() []fake.Reply {
	return []fake.Reply{queries("a"), reflection(true, ""), fake.Text("final").When(fake.Contains("well-researched answer"))}
}

func TestTransientModelErrorsAreRetriedByDefault(t *testing.T) {
	transient := map[string]error{
		"rate limited": &llm.APIError{Provider: "fake", Status: 429, Message: "slow down"},
		"overloaded":   &llm.APIError{Provider: "fake", Status: 529, Message: "Overloaded"},
		"stream cut":   brokenStream,
	}
	failing := map[string]fake.Matcher{
		research.NodeGenerateQuery:  fake.Schema("SearchQueryList"),
		research.NodeReflection:     fake.Schema("Reflection"),
		research.NodeFinalizeAnswer: fake.Contains("well-researched answer"),
	}
	for node, match := range failing {
		for name, err := range transient {
			t.Run(node+"/"+name, func(t *testing.T) {
				t.Parallel()
				m := fake.New(append([]fake.Reply{fake.Error(err).When(match)}, script()...)...)
				rep, runErr := newResearcher(t, m, &scripted{}, research.Config{}).Run(context.Background(), "question")
				require.NoError(t, runErr)
				assert.Equal(t, "final", rep.Answer)
				assert.Zero(t, m.Remaining(), "the failed call was answered again")
			})
		}
	}
	t.Run(research.NodeWebResearch, func(t *testing.T) {
		t.Parallel()
		b := &flakyBackend{err: brokenStream}
		rep, err := newResearcher(t, fake.New(script()...), b, research.Config{}).Run(context.Background(), "question")
		require.NoError(t, err)
		assert.Equal(t, "final", rep.Answer)
		assert.EqualValues(t, 2, b.calls.Load())
	})
}

func TestPermanentModelErrorsAreNotRetried(t *testing.T) {
	for name, err := range map[string]error{
		"rejected key": &llm.APIError{Provider: "fake", Status: 401, KeyEnv: "FAKE_API_KEY", Message: "bad key"},
		"bad request":  &llm.APIError{Provider: "fake", Status: 400, Message: "context too long"},
	} {
		t.Run(name, func(t *testing.T) {
			m := fake.New(append([]fake.Reply{fake.Error(err).When(fake.Schema("SearchQueryList"))}, script()...)...)
			_, runErr := newResearcher(t, m, &scripted{}, research.Config{}).Run(context.Background(), "question")
			require.ErrorIs(t, runErr, err)
			assert.Len(t, m.Calls(), 1, "one call: trying again cannot help")
		})
	}
	t.Run("web research", func(t *testing.T) {
		b := &flakyBackend{err: &llm.APIError{Provider: "fake", Status: 403, Message: "forbidden"}}
		_, err := newResearcher(t, fake.New(script()...), b, research.Config{}).Run(context.Background(), "question")
		require.ErrorIs(t, err, llm.ErrAuth)
		assert.EqualValues(t, 1, b.calls.Load())
	})
}

func TestModelRetryCanBeOverridden(t *testing.T) {
	m := fake.New(append([]fake.Reply{fake.Error(brokenStream).When(fake.Schema("Reflection"))}, script()...)...)
	_, err := newResearcher(t, m, &scripted{}, research.Config{ModelRetry: &graph.RetryPolicy{MaxAttempts: 1}}).Run(context.Background(), "question")
	require.ErrorIs(t, err, llm.ErrStreamBroken)

	m = fake.New(append([]fake.Reply{fake.Error(brokenStream).When(fake.Schema("Reflection"))}, script()...)...)
	rep, err := newResearcher(t, m, &scripted{}, research.Config{ModelRetry: &graph.RetryPolicy{InitialInterval: time.Millisecond}}).Run(context.Background(), "question")
	require.NoError(t, err)
	assert.Equal(t, "final", rep.Answer)
}

// A web_research task that its node runs again — its summary failed with
// a transient error of a model whose client does not retry — does not
// search or read its pages again: a run without a journal keeps one in
// memory (one budget per external call).
func TestNodeRetryDoesNotRepeatTheSearch(t *testing.T) {
	s := &countingSearcher{fakeSearcher: fakeSearcher{results: map[string][]search.Result{
		"a": {{Title: "A", URL: "https://a.example/"}},
	}}}
	pages := &fakeReader{pages: map[string]string{"https://a.example/": "A page about a."}}
	summary := fake.Contains("Summarise what the sources below say")
	m := fake.New(queries("a"),
		fake.Error(&llm.APIError{Provider: "fake", Status: 503, Message: "down"}).When(summary),
		fake.Text("A is so [S1].").When(summary),
		reflection(true, ""), fake.Text("final").When(fake.Contains("well-researched answer")))
	b := &research.SearchBackend{Searcher: s, Reader: pages}
	rep, err := newResearcher(t, m, b, research.Config{ModelRetry: &graph.RetryPolicy{MaxAttempts: 3}}).Run(context.Background(), "question")
	require.NoError(t, err)
	assert.Equal(t, "final", rep.Answer)
	assert.Zero(t, m.Remaining(), "the summary was asked again")
	assert.EqualValues(t, 1, s.n.Load(), "one search")
	assert.Len(t, pages.read, 1, "one page read")
}
