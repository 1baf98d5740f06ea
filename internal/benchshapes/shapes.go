// Package benchshapes builds the three graph shapes of the engine's
// performance targets, so that graph's own benchmarks and the side-by-side
// peer benchmarks in bench/peers measure exactly the same graphs:
//
//   - Chain: three trivial nodes in a row passing a small struct;
//   - FanOut: one node, width Send tasks, one join node;
//   - Loop: one node looping through a conditional edge n times.
//
// Each takes Compile options, so that stores can be measured on the same
// shapes (with graph.WithCheckpointer).
package benchshapes

import (
	"context"

	"github.com/deepgraph/deepgraph/graph"
)

// ChainState is the small struct the chain passes along.
type ChainState struct{ A, B, C int }

var (
	chainA = graph.Value(func(s *ChainState) *int { return &s.A })
	chainB = graph.Value(func(s *ChainState) *int { return &s.B })
	chainC = graph.Value(func(s *ChainState) *int { return &s.C })
)

// Chain returns Start → a → b → c → End; the result has C == 3.
func Chain(opts ...graph.Option) (*graph.Compiled[ChainState], error) {
	g := graph.New[ChainState](chainA, chainB, chainC)
	g.AddNode("a", func(_ context.Context, s ChainState) (graph.Update[ChainState], error) {
		return graph.Writes(chainA.Set(s.A + 1)), nil
	})
	g.AddNode("b", func(_ context.Context, s ChainState) (graph.Update[ChainState], error) {
		return graph.Writes(chainB.Set(s.A + 1)), nil
	})
	g.AddNode("c", func(_ context.Context, s ChainState) (graph.Update[ChainState], error) {
		return graph.Writes(chainC.Set(s.B + 1)), nil
	})
	g.AddSequence(graph.Start, "a", "b", "c", graph.End)
	return g.Compile(opts...)
}

// FanState is the state of the fan-out.
type FanState struct {
	Results []int
	Sum     int
}

var (
	fanResults = graph.Append(func(s *FanState) *[]int { return &s.Results })
	fanSum     = graph.Value(func(s *FanState) *int { return &s.Sum })
)

// FanOut returns split → width × work → join; the result's Sum is
// width*(width-1).
func FanOut(width int, opts ...graph.Option) (*graph.Compiled[FanState], error) {
	g := graph.New[FanState](fanResults, fanSum)
	g.AddNode("split", func(context.Context, FanState) (graph.Update[FanState], error) {
		return graph.Update[FanState]{}, nil
	})
	graph.AddTask(g, "work", func(_ context.Context, i int) (graph.Update[FanState], error) {
		return graph.Writes(fanResults.Add(i * 2)), nil
	})
	g.AddNode("join", func(_ context.Context, s FanState) (graph.Update[FanState], error) {
		sum := 0
		for _, r := range s.Results {
			sum += r
		}
		return graph.Writes(fanSum.Set(sum)), nil
	})
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(FanState) []int {
		items := make([]int, width)
		for i := range items {
			items[i] = i
		}
		return items
	})
	g.AddEdge("work", "join")
	g.AddEdge("join", graph.End)
	return g.Compile(opts...)
}

// LoopState is the state of the loop.
type LoopState struct{ N int }

var loopN = graph.Value(func(s *LoopState) *int { return &s.N })

// Loop returns one node that increments N, looping through a conditional
// edge until N == iterations.
func Loop(iterations int, opts ...graph.Option) (*graph.Compiled[LoopState], error) {
	g := graph.New[LoopState](loopN)
	g.AddNode("inc", func(_ context.Context, s LoopState) (graph.Update[LoopState], error) {
		return graph.Writes(loopN.Set(s.N + 1)), nil
	})
	g.AddEdge(graph.Start, "inc")
	g.AddConditional("inc", func(s LoopState) graph.Route {
		if s.N < iterations {
			return graph.Goto("inc")
		}
		return graph.Goto(graph.End)
	}, "inc", graph.End)
	return g.Compile(append([]graph.Option{graph.WithRecursionLimit(iterations + 1)}, opts...)...)
}
