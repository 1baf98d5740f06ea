package graph_test

import (
	"context"
	"fmt"

	"github.com/deepgraph/deepgraph/graph"
)

// A deferred node (graph.Defer, LangGraph's defer=True) waits for every
// other branch: here the summary runs once, after the long branch too,
// though the short one reaches it two steps earlier.
func ExampleDefer() {
	type State struct{ Notes []string }
	notes := graph.Append(func(s *State) *[]string { return &s.Notes })
	note := func(n string) graph.NodeFunc[State] {
		return func(context.Context, State) (graph.Update[State], error) {
			return graph.Writes(notes.Add(n)), nil
		}
	}
	g := graph.New[State](notes)
	g.AddNode("quick", note("quick"))
	g.AddNode("slow1", note("slow1"))
	g.AddNode("slow2", note("slow2"))
	g.AddNode("summary", func(_ context.Context, s State) (graph.Update[State], error) {
		return graph.Writes(notes.Add(fmt.Sprintf("summary of %d", len(s.Notes)))), nil
	}, graph.Defer())
	g.AddEdge(graph.Start, "quick")
	g.AddEdge(graph.Start, "slow1")
	g.AddSequence("slow1", "slow2", "summary", graph.End)
	g.AddEdge("quick", "summary")
	run, err := g.Compile()
	if err != nil {
		panic(err)
	}
	out, err := run.Invoke(context.Background(), State{})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Notes)
	// Output: [quick slow1 slow2 summary of 3]
}
