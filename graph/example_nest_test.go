package graph_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/deepgraph/deepgraph/graph"
)

// A subgraph checkpoints under its own namespace of the parent's thread:
// when a node inside it asks a question, the Resume with the answer runs
// that node again and nothing else of the subgraph. The subgraph's own
// state is read in its namespace (TaskState.Subgraphs), on the subgraph
// compiled with the same store.
func Example_subgraphInterrupt() {
	type State struct{ Steps []string }
	steps := graph.Append(func(s *State) *[]string { return &s.Steps })
	searches := 0

	inner := graph.New[State](steps)
	inner.AddNode("search", func(context.Context, State) (graph.Update[State], error) {
		searches++ // a costly call: it must not be paid twice
		return graph.Writes(steps.Add("searched")), nil
	})
	inner.AddNode("approve", func(ctx context.Context, _ State) (graph.Update[State], error) {
		ok, err := graph.Interrupt[bool](ctx, "publish the results?")
		if err != nil {
			return graph.Update[State]{}, err
		}
		return graph.Writes(steps.Add(fmt.Sprint("approved: ", ok))), nil
	})
	inner.AddSequence(graph.Start, "search", "approve", graph.End)
	store := graph.NewMemorySaver()
	sub, err := inner.Compile(graph.WithCheckpointer(store))
	if err != nil {
		panic(err)
	}

	g := graph.New[State](steps)
	g.AddSubgraph("research", sub)
	g.AddSequence(graph.Start, "research", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(store))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	_, err = run.Invoke(ctx, State{}, graph.Thread("t"))
	fmt.Println("paused:", errors.Is(err, graph.ErrInterrupted))

	snap, err := run.State(ctx, graph.Thread("t"))
	if err != nil {
		panic(err)
	}
	ns := snap.Tasks[0].Subgraphs[0] // "research:<task id>"
	inside, err := sub.State(ctx, graph.Thread("t").In(ns))
	if err != nil {
		panic(err)
	}
	fmt.Println("inside:", inside.State.Steps, "next:", inside.Next)

	out, err := run.Resume(ctx, graph.Thread("t"), graph.Answer(true))
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Steps, "searches:", searches)
	// Output:
	// paused: true
	// inside: [searched] next: [approve]
	// [searched approved: true] searches: 1
}
