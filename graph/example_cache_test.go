package graph_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/graph"
)

// A node with a cache policy runs once per input: the second run on the
// same question reuses its update, and its task end says Cached. The key
// here ignores case, so "Why is the sky blue?" and "why is the sky blue?"
// share a result; ClearCache forgets it.
func ExampleWithCachePolicy() {
	type State struct {
		Question string
		Answer   string
	}
	question := graph.Value(func(s *State) *string { return &s.Question })
	answer := graph.Value(func(s *State) *string { return &s.Answer })
	calls := 0
	g := graph.New[State](question, answer)
	g.AddNode("ask_model", func(_ context.Context, s State) (graph.Update[State], error) {
		calls++ // an expensive model call
		return graph.Writes(answer.Set("Rayleigh scattering")), nil
	}, graph.WithCachePolicy(graph.CachePolicy[State]{
		Key: func(s State) (string, error) { return strings.ToLower(s.Question), nil },
		TTL: time.Hour,
	}))
	g.AddSequence(graph.Start, "ask_model", graph.End)
	c, err := g.Compile(graph.WithCache(graph.NewMemoryCache()))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, q := range []string{"Why is the sky blue?", "why is the sky blue?"} {
		for ev, err := range c.Stream(ctx, State{Question: q}, graph.Events(graph.EventTaskEnd)) {
			if err != nil {
				panic(err)
			}
			a, _ := answer.Written(ev.Update)
			fmt.Printf("%s: %q cached=%v\n", ev.Node, a, ev.Cached)
		}
	}
	if err := c.ClearCache(ctx, "ask_model"); err != nil {
		panic(err)
	}
	if _, err := c.Invoke(ctx, State{Question: "Why is the sky blue?"}); err != nil {
		panic(err)
	}
	fmt.Println("model calls:", calls)
	// Output:
	// ask_model: "Rayleigh scattering" cached=false
	// ask_model: "Rayleigh scattering" cached=true
	// model calls: 2
}
