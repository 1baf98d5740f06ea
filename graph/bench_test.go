package graph_test

import (
	"context"
	"testing"

	"github.com/deepgraph/deepgraph/graph"
)

// The three shapes of the engine's performance targets; bench/peers runs the
// same shapes on cloudwego/eino for comparison.

type chainState struct{ A, B, C int }

var (
	chainA = graph.Value(func(s *chainState) *int { return &s.A })
	chainB = graph.Value(func(s *chainState) *int { return &s.B })
	chainC = graph.Value(func(s *chainState) *int { return &s.C })
)

func chainGraph(tb testing.TB) *graph.Compiled[chainState] {
	g := graph.New[chainState](chainA, chainB, chainC)
	g.AddNode("a", func(_ context.Context, s chainState) (graph.Update[chainState], error) {
		return graph.Writes(chainA.Set(s.A + 1)), nil
	})
	g.AddNode("b", func(_ context.Context, s chainState) (graph.Update[chainState], error) {
		return graph.Writes(chainB.Set(s.A + 1)), nil
	})
	g.AddNode("c", func(_ context.Context, s chainState) (graph.Update[chainState], error) {
		return graph.Writes(chainC.Set(s.B + 1)), nil
	})
	g.AddSequence(graph.Start, "a", "b", "c", graph.End)
	c, err := g.Compile()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

type fanState struct {
	N       int
	Results []int
	Sum     int
}

var (
	fanResults = graph.Append(func(s *fanState) *[]int { return &s.Results })
	fanSum     = graph.Value(func(s *fanState) *int { return &s.Sum })
)

func fanGraph(tb testing.TB, width int) *graph.Compiled[fanState] {
	g := graph.New[fanState](fanResults, fanSum)
	g.AddNode("split", func(_ context.Context, s fanState) (graph.Update[fanState], error) {
		return graph.Update[fanState]{}, nil
	})
	graph.AddTask(g, "work", func(_ context.Context, i int) (graph.Update[fanState], error) {
		return graph.Writes(fanResults.Add(i * 2)), nil
	})
	g.AddNode("join", func(_ context.Context, s fanState) (graph.Update[fanState], error) {
		sum := 0
		for _, r := range s.Results {
			sum += r
		}
		return graph.Writes(fanSum.Set(sum)), nil
	})
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(s fanState) []int {
		items := make([]int, width)
		for i := range items {
			items[i] = i
		}
		return items
	})
	g.AddEdge("work", "join")
	g.AddEdge("join", graph.End)
	c, err := g.Compile()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

type loopState struct{ N int }

var loopN = graph.Value(func(s *loopState) *int { return &s.N })

func loopGraph(tb testing.TB, iterations int) *graph.Compiled[loopState] {
	g := graph.New[loopState](loopN)
	g.AddNode("inc", func(_ context.Context, s loopState) (graph.Update[loopState], error) {
		return graph.Writes(loopN.Set(s.N + 1)), nil
	})
	g.AddEdge(graph.Start, "inc")
	g.AddConditional("inc", func(s loopState) graph.Route {
		if s.N < iterations {
			return graph.Goto("inc")
		}
		return graph.Goto(graph.End)
	}, "inc", graph.End)
	c, err := g.Compile(graph.WithRecursionLimit(iterations + 1))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func BenchmarkChain3(b *testing.B) {
	c := chainGraph(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := c.Invoke(ctx, chainState{})
		if err != nil || out.C != 3 {
			b.Fatal(out, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/3, "ns/node")
}

func BenchmarkFanOut100(b *testing.B) {
	c := fanGraph(b, 100)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := c.Invoke(ctx, fanState{})
		if err != nil || out.Sum != 9900 {
			b.Fatal(out.Sum, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/102, "ns/node")
}

func BenchmarkLoop100(b *testing.B) {
	c := loopGraph(b, 100)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := c.Invoke(ctx, loopState{})
		if err != nil || out.N != 100 {
			b.Fatal(out, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/node")
}
