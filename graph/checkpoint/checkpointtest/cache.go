package checkpointtest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// cachedFanOut is split → work ×items → End, work cached by its item in
// cache; work fails for items in fail.
func cachedFanOut(store graph.Checkpointer, cache graph.Cache, items []string, runs *counter, fail func(string) bool) (*graph.Compiled[State], error) {
	g := graph.New[State](fItems, fLog, fNote)
	g.AddNode("split", func(context.Context, State) (graph.Update[State], error) {
		return graph.Writes(fLog.Add("split")), nil
	})
	graph.AddTask(g, "work", func(_ context.Context, item string) (graph.Update[State], error) {
		runs.add(item)
		if fail(item) {
			return graph.Update[State]{}, fmt.Errorf("work on %s failed", item)
		}
		return graph.Writes(fItems.Add(item + " done")), nil
	}, graph.WithCachePolicy(graph.CachePolicy[string]{}))
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(State) []string { return items })
	g.AddEdge("work", graph.End)
	return g.Compile(graph.WithCheckpointer(store), graph.WithCache(cache))
}

// testGraphNodeCache: tasks reused from the node cache are stored as
// cached (TaskWrite.Cached round-trips), and a run that failed in a step
// with cached tasks resumes without running them or the tasks that had
// finished.
func testGraphNodeCache(t *testing.T, s graph.Checkpointer) {
	cache := graph.NewMemoryCache()
	var runs counter
	var mu sync.Mutex
	failing := map[string]bool{}
	fail := func(item string) bool { mu.Lock(); defer mu.Unlock(); return failing[item] }
	g, err := cachedFanOut(s, cache, []string{"a", "b"}, &runs, fail)
	require.NoError(t, err)
	_, err = g.Invoke(ctx(t), State{}, graph.Thread("warm"))
	require.NoError(t, err)

	// a and b are cached; c fails the first time.
	mu.Lock()
	failing["c"] = true
	mu.Unlock()
	g2, err := cachedFanOut(s, cache, []string{"a", "b", "c"}, &runs, fail)
	require.NoError(t, err)
	_, err = g2.Invoke(ctx(t), State{}, graph.Thread("cached"))
	require.ErrorContains(t, err, "work on c failed")
	snap, err := g2.State(ctx(t), graph.Thread("cached"))
	require.NoError(t, err)
	cached := map[string]bool{}
	for _, task := range snap.Tasks {
		if task.Done {
			arg, _ := task.Arg.(string)
			cached[arg] = task.Cached
		}
	}
	assert.Equal(t, map[string]bool{"a": true, "b": true}, cached, "the store kept which tasks came from the cache")

	mu.Lock()
	failing["c"] = false
	mu.Unlock()
	out, err := g2.Resume(ctx(t), graph.Thread("cached"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a done", "b done", "c done"}, out.Items)
	assert.Equal(t, 1, runs.get("a"), "a ran once, in thread warm")
	assert.Equal(t, 1, runs.get("b"))
	assert.Equal(t, 2, runs.get("c"), "c failed, then ran on Resume")

	hist, err := g2.History(ctx(t), graph.Thread("warm"), 0)
	require.NoError(t, err)
	for _, h := range hist {
		for _, task := range h.Tasks {
			assert.False(t, task.Cached, "thread warm ran its tasks: %s", task.Node)
		}
	}
}
