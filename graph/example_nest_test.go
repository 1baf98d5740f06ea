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

// In a checkpointed run each EventStep names the checkpoint its state is
// stored as (Event.Checkpoint) — a subgraph's too, in its namespace, with
// the checkpoints of the runs above it: what LangGraph's "checkpoints"
// stream says of each. A node that runs a compiled graph itself, here by
// streaming it, has it checkpoint and stream as a subgraph when its run
// streams its subgraphs.
func ExampleStepCheckpoint() {
	type State struct{ Steps []string }
	steps := graph.Append(func(s *State) *[]string { return &s.Steps })
	store := graph.NewMemorySaver()
	inner := graph.New[State](steps)
	inner.AddNode("search", func(context.Context, State) (graph.Update[State], error) {
		return graph.Writes(steps.Add("searched")), nil
	})
	inner.AddSequence(graph.Start, "search", graph.End)
	sub, err := inner.Compile(graph.WithCheckpointer(store))
	if err != nil {
		panic(err)
	}
	g := graph.New[State](steps)
	g.AddNode("research", func(ctx context.Context, _ State) (graph.Update[State], error) {
		var found []string
		for ev, err := range sub.Stream(ctx, State{}, graph.Events(graph.EventEnd)) {
			if err != nil {
				return graph.Update[State]{}, err
			}
			found = ev.State.Steps
		}
		return graph.Writes(steps.Add(found...)), nil
	})
	g.AddSequence(graph.Start, "research", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(store))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for ev, err := range run.Stream(ctx, State{}, graph.Thread("t"), graph.StreamSubgraphs(), graph.Events(graph.EventStep)) {
		if err != nil {
			panic(err)
		}
		cp := ev.Checkpoint
		where := "root"
		if ns := cp.Ref.Namespace; ns != "" {
			where, _, _ = strings.Cut(ns, ":")
		}
		var next []string
		for _, t := range cp.Next {
			next = append(next, t.Node)
		}
		fmt.Println(where, cp.Source, "step", cp.Step, "next", next, "runs above:", len(cp.Parents))
		// The same checkpoint, read from the store on the graph that wrote it.
		at, err := sub.State(ctx, cp.Ref)
		if where == "root" {
			at, err = run.State(ctx, cp.Ref)
		}
		if err != nil || at.CheckpointID != cp.Ref.Checkpoint {
			panic(fmt.Sprint("not stored: ", err))
		}
	}
	// Output:
	// root input step 0 next [research] runs above: 0
	// research input step 0 next [search] runs above: 1
	// research loop step 1 next [] runs above: 1
	// root loop step 1 next [] runs above: 0
}
