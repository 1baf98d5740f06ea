package graph_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

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

// DurabilityExit writes a run's progress only when it returns: here one
// checkpoint for a three-step run, where the default (DurabilitySync)
// writes one per step and the input's.
func ExampleDurability() {
	type State struct{ N int }
	n := graph.Value(func(s *State) *int { return &s.N })
	g := graph.New[State](n)
	for _, name := range []string{"a", "b", "c"} {
		g.AddNode(name, func(_ context.Context, s State) (graph.Update[State], error) {
			return graph.Writes(n.Set(s.N + 1)), nil
		})
	}
	g.AddSequence(graph.Start, "a", "b", "c", graph.End)
	store := graph.NewMemorySaver()
	run, err := g.Compile(graph.WithCheckpointer(store))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, mode := range []graph.DurabilityMode{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		thread := graph.Thread(mode.String())
		out, err := run.Invoke(ctx, State{}, thread, graph.Durability(mode))
		if err != nil {
			panic(err)
		}
		hist, err := run.History(ctx, thread, 0)
		if err != nil {
			panic(err)
		}
		fmt.Println(mode, out.N, len(hist))
	}
	// Output:
	// sync 3 4
	// async 3 4
	// exit 3 1
}

// StreamSubgraphs passes a subgraph's events up the stream, each with the
// namespace of the subgraph's run: "research:<task id>" here, a namespace
// per task that runs the subgraph, joined by "|" when subgraphs nest.
func ExampleStreamSubgraphs() {
	type State struct{ Steps []string }
	steps := graph.Append(func(s *State) *[]string { return &s.Steps })
	step := func(name string) graph.NodeFunc[State] {
		return func(context.Context, State) (graph.Update[State], error) {
			return graph.Writes(steps.Add(name)), nil
		}
	}
	inner := graph.New[State](steps)
	inner.AddNode("search", step("searched"))
	inner.AddNode("read", step("read"))
	inner.AddSequence(graph.Start, "search", "read", graph.End)
	sub, err := inner.Compile()
	if err != nil {
		panic(err)
	}
	g := graph.New[State](steps)
	g.AddSubgraph("research", sub)
	g.AddSequence(graph.Start, "research", graph.End)
	run, err := g.Compile()
	if err != nil {
		panic(err)
	}

	events := run.Stream(context.Background(), State{}, graph.StreamSubgraphs(), graph.Events(graph.EventStep, graph.EventTaskEnd))
	for ev, err := range events {
		if err != nil {
			panic(err)
		}
		where := "root"
		if ev.Namespace != "" {
			where, _, _ = strings.Cut(ev.Namespace, ":") // the node that runs the subgraph
		}
		if ev.Kind == graph.EventStep {
			fmt.Println(where, "step", ev.Step, ev.State.Steps)
		} else {
			fmt.Println(where, "ran", ev.Node)
		}
	}
	// Output:
	// root step 0 []
	// research step 0 []
	// research ran research/search
	// research step 1 [searched]
	// research ran research/read
	// research step 2 [searched read]
	// root ran research
	// root step 1 [searched read]
}
