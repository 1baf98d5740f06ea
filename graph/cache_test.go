package graph_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

type cacheState struct {
	Query   string   `json:"query"`
	Answers []string `json:"answers"`
	Notes   []string `json:"notes"`
}

var (
	cQuery   = graph.Value(func(s *cacheState) *string { return &s.Query })
	cAnswers = graph.Append(func(s *cacheState) *[]string { return &s.Answers })
	cNotes   = graph.Append(func(s *cacheState) *[]string { return &s.Notes })
)

// cacheGraph is answer → fan out one "look" task per word of the query →
// End. answer and look count their runs; look is keyed by the word's
// lower case only.
type cacheGraph struct {
	answers, looks atomic.Int32
	fail           atomic.Bool
}

func (cg *cacheGraph) build(t *testing.T, opts ...graph.Option) *graph.Compiled[cacheState] {
	g := graph.New[cacheState](cQuery, cAnswers, cNotes)
	g.AddNode("answer", func(_ context.Context, s cacheState) (graph.Update[cacheState], error) {
		cg.answers.Add(1)
		if cg.fail.Load() {
			return graph.Update[cacheState]{}, errors.New("the model is down")
		}
		return graph.Writes(cAnswers.Add("answer to " + s.Query)), nil
	}, graph.WithCachePolicy(graph.CachePolicy[cacheState]{TTL: time.Hour}))
	graph.AddTask(g, "look", func(_ context.Context, word string) (graph.Update[cacheState], error) {
		cg.looks.Add(1)
		return graph.Writes(cNotes.Add("looked up " + word)), nil
	}, graph.WithCachePolicy(graph.CachePolicy[string]{Key: func(w string) (string, error) { return strings.ToLower(w), nil }}))
	g.AddEdge(graph.Start, "answer")
	graph.AddFanOut(g, "answer", "look", func(s cacheState) []string { return strings.Fields(s.Query) })
	g.AddEdge("look", graph.End)
	c, err := g.Compile(opts...)
	require.NoError(t, err)
	return c
}

func TestCacheReusesResults(t *testing.T) {
	cg := &cacheGraph{}
	cache := graph.NewMemoryCache()
	c := cg.build(t, graph.WithCache(cache))
	first, err := c.Invoke(t.Context(), cacheState{Query: "Go graphs"})
	require.NoError(t, err)
	assert.EqualValues(t, 1, cg.answers.Load())
	assert.EqualValues(t, 2, cg.looks.Load())

	// The same input again: nothing runs, and the stream says so.
	var ends []graph.Event[cacheState]
	starts := 0
	for ev, err := range c.Stream(t.Context(), cacheState{Query: "Go graphs"}, graph.Events(graph.EventTaskStart, graph.EventTaskEnd)) {
		require.NoError(t, err)
		switch ev.Kind {
		case graph.EventTaskStart:
			starts++
		case graph.EventTaskEnd:
			ends = append(ends, ev)
		}
	}
	assert.EqualValues(t, 1, cg.answers.Load(), "answer came from the cache")
	assert.EqualValues(t, 2, cg.looks.Load(), "both looks came from the cache")
	assert.Zero(t, starts, "a cached task does not start")
	require.Len(t, ends, 3)
	for _, ev := range ends {
		assert.True(t, ev.Cached, "task end of %s says cached", ev.Node)
	}
	second, err := c.Invoke(t.Context(), cacheState{Query: "Go graphs"})
	require.NoError(t, err)
	assert.Equal(t, first, second, "a cached run ends in the same state")

	// Another query runs answer again; a look keyed by a word seen before,
	// in another case, is reused.
	got, err := c.Invoke(t.Context(), cacheState{Query: "GO fast"})
	require.NoError(t, err)
	assert.EqualValues(t, 2, cg.answers.Load())
	assert.EqualValues(t, 3, cg.looks.Load(), "only 'fast' is new")
	assert.Equal(t, []string{"looked up Go", "looked up fast"}, got.Notes, "the reused look wrote what it wrote for 'Go'")
}

func TestCacheClear(t *testing.T) {
	cg := &cacheGraph{}
	cache := graph.NewMemoryCache()
	c := cg.build(t, graph.WithCache(cache))
	in := cacheState{Query: "a b"}
	_, err := c.Invoke(t.Context(), in)
	require.NoError(t, err)
	require.Equal(t, 3, cache.Len())

	require.NoError(t, c.ClearCache(t.Context(), "look"))
	assert.Equal(t, 1, cache.Len(), "answer's entry stays")
	_, err = c.Invoke(t.Context(), in)
	require.NoError(t, err)
	assert.EqualValues(t, 1, cg.answers.Load())
	assert.EqualValues(t, 4, cg.looks.Load(), "the looks ran again")

	require.NoError(t, c.ClearCache(t.Context()))
	assert.Zero(t, cache.Len())
	_, err = c.Invoke(t.Context(), in)
	require.NoError(t, err)
	assert.EqualValues(t, 2, cg.answers.Load())
	assert.EqualValues(t, 6, cg.looks.Load())

	plain, err := graph.New[cacheState](cQuery).AddNode("n", func(context.Context, cacheState) (graph.Update[cacheState], error) {
		return graph.Update[cacheState]{}, nil
	}).AddEdge(graph.Start, "n").AddEdge("n", graph.End).Compile()
	require.NoError(t, err)
	require.ErrorContains(t, plain.ClearCache(t.Context()), "no cache")
}

func TestCacheFailuresAreNotCached(t *testing.T) {
	cg := &cacheGraph{}
	c := cg.build(t, graph.WithCache(graph.NewMemoryCache()))
	cg.fail.Store(true)
	_, err := c.Invoke(t.Context(), cacheState{Query: "x"})
	require.ErrorContains(t, err, "the model is down")
	cg.fail.Store(false)
	got, err := c.Invoke(t.Context(), cacheState{Query: "x"})
	require.NoError(t, err)
	assert.EqualValues(t, 2, cg.answers.Load(), "the failure was not reused")
	assert.Equal(t, []string{"answer to x"}, got.Answers)
}

// expiringCache is a MemoryCache whose clock the test moves.
type expiringCache struct {
	*graph.MemoryCache
	mu   sync.Mutex
	ttls []time.Duration
}

func (e *expiringCache) Set(ctx context.Context, key graph.CacheKey, value []byte, ttl time.Duration) error {
	e.mu.Lock()
	e.ttls = append(e.ttls, ttl)
	e.mu.Unlock()
	return e.MemoryCache.Set(ctx, key, value, ttl)
}

func TestCacheTTLIsPassedOn(t *testing.T) {
	cg := &cacheGraph{}
	cache := &expiringCache{MemoryCache: graph.NewMemoryCache()}
	c := cg.build(t, graph.WithCache(cache))
	_, err := c.Invoke(t.Context(), cacheState{Query: "w"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []time.Duration{time.Hour, 0}, cache.ttls, "answer's TTL, and none for look")
}

func TestMemoryCacheExpiry(t *testing.T) {
	m := graph.NewMemoryCache()
	k := graph.CacheKey{Node: "n", Input: "k"}
	require.NoError(t, m.Set(t.Context(), k, []byte(`{}`), time.Nanosecond))
	// A nanosecond has passed by the time Get reads the clock.
	for {
		_, ok, err := m.Get(t.Context(), k)
		require.NoError(t, err)
		if !ok {
			break
		}
	}
	assert.Zero(t, m.Len(), "an expired entry is dropped when met")
	require.NoError(t, m.Set(t.Context(), k, []byte(`{}`), 0))
	_, ok, err := m.Get(t.Context(), k)
	require.NoError(t, err)
	assert.True(t, ok, "no TTL: kept")
}

// failingCache fails every call.
type failingCache struct{}

func (failingCache) Get(context.Context, graph.CacheKey) ([]byte, bool, error) {
	return nil, false, errors.New("cache down")
}
func (failingCache) Set(context.Context, graph.CacheKey, []byte, time.Duration) error {
	return errors.New("cache down")
}
func (failingCache) Clear(context.Context, ...string) error { return errors.New("cache down") }

func TestCacheErrors(t *testing.T) {
	cg := &cacheGraph{}
	c := cg.build(t, graph.WithCache(failingCache{}))
	_, err := c.Invoke(t.Context(), cacheState{Query: "x"})
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "answer", ne.Node)
	assert.ErrorContains(t, err, "reading the node cache: cache down")
	assert.ErrorContains(t, c.ClearCache(t.Context()), "cache down")

	g := graph.New[cacheState](cQuery)
	g.AddNode("n", func(context.Context, cacheState) (graph.Update[cacheState], error) {
		return graph.Update[cacheState]{}, nil
	}, graph.WithCachePolicy(graph.CachePolicy[cacheState]{Key: func(cacheState) (string, error) { return "", errors.New("no key") }}))
	g.AddEdge(graph.Start, "n").AddEdge("n", graph.End)
	kc, err := g.Compile(graph.WithCache(graph.NewMemoryCache()))
	require.NoError(t, err)
	_, err = kc.Invoke(t.Context(), cacheState{})
	require.ErrorContains(t, err, "making its cache key: no key")
}

func TestCachePolicyMistakes(t *testing.T) {
	g := graph.New[cacheState](cQuery)
	noop := func(context.Context, cacheState) (graph.Update[cacheState], error) {
		return graph.Update[cacheState]{}, nil
	}
	g.AddNode("n", noop, graph.WithCachePolicy(graph.CachePolicy[string]{Key: func(s string) (string, error) { return s, nil }}))
	g.AddNode("m", noop, graph.WithCachePolicy(graph.CachePolicy[cacheState]{}))
	g.AddEdge(graph.Start, "n").AddEdge("n", "m").AddEdge("m", graph.End)
	_, err := g.Compile(graph.WithNodeDefaults(graph.WithCachePolicy(graph.CachePolicy[cacheState]{})))
	require.Error(t, err)
	assert.ErrorContains(t, err, "graph.WithNodeDefaults: a cache policy is set per node")
	assert.ErrorContains(t, err, `node "n": its CachePolicy's Key takes string, and the node's input is graph_test.cacheState`)
	assert.ErrorContains(t, err, `node "m" has a cache policy (graph.WithCachePolicy), and the graph has no cache`)
}

func TestCacheWithTaskRunnerRefused(t *testing.T) {
	cg := &cacheGraph{}
	c := cg.build(t, graph.WithCache(graph.NewMemoryCache()))
	assert.Equal(t, []string{"answer", "look"}, c.CachedNodes())
	_, err := c.Invoke(t.Context(), cacheState{Query: "x"}, graph.WithTaskRunner(refuseRunner{}))
	require.ErrorContains(t, err, `node "answer" has a cache policy (graph.WithCachePolicy), which a run with a TaskRunner does not apply`)
}

type refuseRunner struct{}

func (refuseRunner) RunTasks(context.Context, graph.RemoteStep) ([]graph.RemoteResult, error) {
	return nil, fmt.Errorf("not reached")
}

// TestCacheWithCheckpointer: a cached task is recorded as cached, so that
// History tells it from a task that ran, and a resumed run goes on from it.
func TestCacheWithCheckpointer(t *testing.T) {
	cg := &cacheGraph{}
	saver := graph.NewMemorySaver()
	c := cg.build(t, graph.WithCache(graph.NewMemoryCache()), graph.WithCheckpointer(saver))
	_, err := c.Invoke(t.Context(), cacheState{Query: "one"}, graph.Thread("a"))
	require.NoError(t, err)
	got, err := c.Invoke(t.Context(), cacheState{Query: "one"}, graph.Thread("b"))
	require.NoError(t, err)
	assert.Equal(t, []string{"answer to one"}, got.Answers)
	assert.EqualValues(t, 1, cg.answers.Load())
	for thread, want := range map[string]bool{"a": false, "b": true} {
		hist, err := c.History(t.Context(), graph.Thread(thread), 0)
		require.NoError(t, err)
		seen := 0
		for _, h := range hist {
			for _, task := range h.Tasks {
				if task.Done {
					seen++
					assert.Equal(t, want, task.Cached, "thread %s, task %s", thread, task.Node)
				}
			}
		}
		assert.Equal(t, 2, seen, "thread %s: answer and look recorded", thread)
	}
}
